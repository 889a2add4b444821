// meshlearn-keygen: writes a CURVE key pair for one node (DESIGN.md "Reliability and security").
//
//   meshlearn-keygen --name NAME [--id ID] [--out DIR] [--force]
//
// Writes DIR/NAME.key (the secret key, created with mode 0600) and DIR/NAME.pub (the public key
// bound to node id ID, NAME by default; --id "" binds it to no id), in the format a node's
// [security] section reads (node/transport/curve_keys.h), and prints the public key on stdout.
// Existing files are never replaced without --force.
//
// Exit codes: 0 written; 1 not written (a file exists, or a write failed); 2 bad command line.
#include <cstdio>
#include <filesystem>
#include <optional>

#include <CLI/CLI.hpp>

#include "node/transport/curve_keys.h"
#include "protocol/wire_text.h"
#include "tools/cli/cli_exit.h"

int main(int argc, char** argv) {
  CLI::App app{"meshlearn-keygen: write a CURVE key pair for a meshlearn node"};
  std::string name;
  std::optional<std::string> node_id;
  std::string out_dir = ".";
  bool force = false;
  app.add_option("-n,--name", name, "key name, usually the node id: writes NAME.key and NAME.pub")
      ->required();
  app.add_option("--id", node_id,
                 "node id the public key is bound to (default NAME; \"\" binds it to none): "
                 "with [security], only this id may use the key");
  app.add_option("-o,--out", out_dir, "folder to write into (created if missing; default .)");
  app.add_flag("-f,--force", force, "replace existing NAME.key and NAME.pub");
  if (std::optional<int> exit = meshlearn::tools::ParseCommandLine(app, argc, argv)) return *exit;

  std::string bound = node_id.value_or(name);
  if (!bound.empty() && !meshlearn::IsNodeId(bound)) {
    std::fprintf(stderr,
                 "meshlearn-keygen: '%s' is not a node id (%s); pass the node's id with --id\n",
                 bound.c_str(), meshlearn::kNodeIdRule);
    return meshlearn::tools::kExitBadInput;
  }
  std::error_code ec;
  std::filesystem::create_directories(out_dir, ec);
  if (ec) {
    std::fprintf(stderr, "meshlearn-keygen: cannot create '%s': %s\n", out_dir.c_str(),
                 ec.message().c_str());
    return meshlearn::tools::kExitFailed;
  }
  auto pair = meshlearn::node::GenerateCurveKeyPair();
  if (!pair.ok()) {
    std::fprintf(stderr, "meshlearn-keygen: %s\n", pair.status().ToString().c_str());
    return meshlearn::tools::kExitFailed;
  }
  meshlearn::Status written =
      meshlearn::node::WriteKeyPairFiles(out_dir, name, *pair, force, bound);
  if (!written.ok()) {
    std::fprintf(stderr, "meshlearn-keygen: %s\n", written.ToString().c_str());
    return meshlearn::tools::kExitFailed;
  }
  std::fprintf(stderr, "meshlearn-keygen: wrote %s (secret, mode 0600) and %s (%s%s)\n",
               meshlearn::node::SecretKeyPath(out_dir, name).c_str(),
               meshlearn::node::PublicKeyPath(out_dir, name).c_str(),
               bound.empty() ? "bound to no node id" : "bound to node id ", bound.c_str());
  std::printf("%s\n", pair->public_key.c_str());
  return meshlearn::tools::kExitOk;
}
