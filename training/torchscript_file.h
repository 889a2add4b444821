#pragma once
// A user's TorchScript file, loaded: the steps every such file takes first, whether it holds a
// model ([model] architecture = "torchscript", training/torchscript_model.cc) or a plug-in
// (plugins/). Includes torch: for the torch code of meshlearn_training and meshlearn_plugins only,
// never from a torch-free header.
//
// Specification. LoadTorchScriptFile refuses, with an error that starts with the path:
// - a path that is not a regular file: kNotFound ("no such TorchScript file");
// - a file torch::jit::load cannot read: kMalformed ("not a TorchScript archive", with how to
//   save one and torch's first line);
// - a module without a forward method: kInvalidArgument.
// The module is loaded on the CPU.

#include <torch/script.h>

#include <string>

#include "base/status.h"

namespace meshlearn::training {

// The module saved at `path` (see the specification).
Result<torch::jit::Module> LoadTorchScriptFile(const std::string& path);

// The first line of `text` (torch's messages carry a C++ backtrace after it).
std::string FirstLine(const std::string& text);

}  // namespace meshlearn::training
