// Models by name: flat parameters with a layout, deterministic initial weights, embeddings, and
// TorchScript files with errors that say what is wrong.

#include "training/model.h"

#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <optional>
#include <random>
#include <thread>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "tests/training/test_support.h"
#include "training/trainer.h"

namespace meshlearn::training {
namespace {

using testing::kFixtureDir;

// The spec of the architecture named `architecture`, for 28x28 images (10-d vectors for linear).
ModelSpec Spec(const std::string& architecture, uint64_t seed = 1) {
  ModelSpec spec;
  std::optional<Architecture> named = ValueNamed(ArchitectureNames(), architecture);
  EXPECT_TRUE(named.has_value()) << architecture;
  spec.architecture = named.value_or(Architecture::kMlp);
  spec.input_shape =
      architecture == "linear" ? std::vector<int64_t>{10} : std::vector<int64_t>{1, 28, 28};
  spec.num_outputs = architecture == "linear" ? 1 : 10;
  spec.seed = seed;
  spec.torchscript_path = kFixtureDir + "/script_mlp.pt";
  return spec;
}

std::unique_ptr<Model> Make(const ModelSpec& spec) {
  Result<std::unique_ptr<Model>> m = CreateModel(spec);
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  return m.ok() ? std::move(m).value() : nullptr;
}

Dataset Images(size_t n) {
  Dataset d;
  d.sample_shape = {1, 28, 28};
  d.num_classes = 10;
  for (size_t i = 0; i < n * 784; ++i) d.features.push_back(static_cast<float>(i % 13) / 13.0f);
  for (size_t i = 0; i < n; ++i) d.labels.push_back(static_cast<int64_t>(i % 10));
  return d;
}

struct Expected {
  std::string architecture;
  uint64_t parameters;
  int64_t embedding_dim;
  std::string first_tensor;
};

// Names the parameter in test names and failure messages.
void PrintTo(const Expected& e, std::ostream* os) { *os << e.architecture; }

class EveryModel : public ::testing::TestWithParam<Expected> {};

TEST_P(EveryModel, HasAValidLayoutOfTheExpectedSize) {
  auto m = Make(Spec(GetParam().architecture));
  ASSERT_TRUE(m);
  EXPECT_EQ(m->Name(), GetParam().architecture);
  EXPECT_TRUE(m->Layout().Validate().ok());
  EXPECT_EQ(m->Layout().total_floats(), GetParam().parameters);
  EXPECT_EQ(m->Layout().tensors[0].name, GetParam().first_tensor);
  EXPECT_EQ(m->EmbeddingDim(), GetParam().embedding_dim);
}

TEST_P(EveryModel, FlatParametersRoundTripAndLayoutMismatchIsAnError) {
  auto m = Make(Spec(GetParam().architecture));
  ASSERT_TRUE(m);
  std::vector<float> w = m->Parameters();
  for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(i % 17) * 0.01f - 0.08f;
  ASSERT_TRUE(m->LoadParameters(m->Layout(), w).ok());
  EXPECT_EQ(m->Parameters(), w);

  const std::vector<float> before = m->Parameters();
  EXPECT_EQ(m->LoadParameters(std::span<const float>(w).first(w.size() - 1)).code(),
            ErrorCode::kLayoutMismatch);
  ParamLayout renamed = m->Layout();
  renamed.tensors[0].name = "other";
  EXPECT_EQ(m->LoadParameters(renamed, w).code(), ErrorCode::kLayoutMismatch);
  w[w.size() / 2] = std::nanf("");
  EXPECT_EQ(m->LoadParameters(w).code(), ErrorCode::kNonFinite);
  EXPECT_EQ(m->Parameters(), before) << "a rejected load must not change the model";
}

TEST_P(EveryModel, CloneCopiesTheWeightsAndIsIndependent) {
  auto m = Make(Spec(GetParam().architecture));
  ASSERT_TRUE(m);
  Result<std::unique_ptr<Model>> copy = m->Clone();
  ASSERT_TRUE(copy.ok()) << copy.status().ToString();
  EXPECT_EQ((*copy)->Parameters(), m->Parameters());
  std::vector<float> zeros(m->Layout().total_floats(), 0.0f);
  ASSERT_TRUE((*copy)->LoadParameters(zeros).ok());
  EXPECT_NE(m->Parameters(), zeros);
}

TEST_P(EveryModel, EmbedsSamplesWhenItHasAnEmbedding) {
  auto m = Make(Spec(GetParam().architecture));
  ASSERT_TRUE(m);
  if (GetParam().embedding_dim == 0) {
    Dataset d;
    d.task = Task::kRegression;
    d.sample_shape = {10};
    d.features.assign(10, 1.0f);
    d.targets = {1.0f};
    const std::vector<size_t> rows = {0};
    EXPECT_EQ(Embed(*m, d, rows).status().code(), ErrorCode::kInvalidArgument);
    return;
  }
  const Dataset d = Images(5);
  const std::vector<size_t> rows = {4, 0, 4};
  Result<std::vector<float>> e = Embed(*m, d, rows);
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  const size_t dim = static_cast<size_t>(GetParam().embedding_dim);
  ASSERT_EQ(e->size(), 3 * dim);
  EXPECT_TRUE(std::equal(e->begin(), e->begin() + dim, e->begin() + 2 * dim));  // same sample
  const std::vector<size_t> outside = {5};
  EXPECT_EQ(Embed(*m, d, outside).status().code(), ErrorCode::kInvalidArgument);
}

INSTANTIATE_TEST_SUITE_P(
    Architectures, EveryModel,
    ::testing::Values(Expected{"linear", 11, 0, "fc.weight"},
                      Expected{"mlp", 784 * 200 + 200 + 200 * 10 + 10, 200, "fc1.weight"},
                      // conv 1->16 3x3, conv 16->32 3x3, fc 32*5*5 -> 64, fc 64 -> 10
                      Expected{"cnn", 160 + 4640 + 51264 + 650, 64, "conv1.weight"},
                      // conv 1->64 5x5, conv 64->128 5x5, fc 128*4*4 -> 128, fc 128 -> 10
                      Expected{"cnn_emd", 1664 + 204928 + 262272 + 1290, 128, "conv1.weight"},
                      Expected{"torchscript", 784 * 200 + 200 + 200 * 10 + 10, 200, "fc1.weight"}),
    [](const auto& info) { return info.param.architecture; });

// Activations of one image: channels x height x width, row-major.
struct Planes {
  int64_t channels = 0, height = 0, width = 0;
  std::vector<double> values;
  double at(int64_t c, int64_t y, int64_t x) const { return values[(c * height + y) * width + x]; }
};

// ReLU(a k x k convolution, no padding) of `in` with the weights and biases at `w` and `b`.
Planes ConvRelu(const Planes& in, const float* w, const float* b, int64_t out_channels, int64_t k) {
  Planes out{out_channels, in.height - k + 1, in.width - k + 1, {}};
  for (int64_t o = 0; o < out.channels; ++o) {
    for (int64_t y = 0; y < out.height; ++y) {
      for (int64_t x = 0; x < out.width; ++x) {
        double sum = b[o];
        for (int64_t c = 0; c < in.channels; ++c) {
          for (int64_t dy = 0; dy < k; ++dy) {
            for (int64_t dx = 0; dx < k; ++dx) {
              sum += w[((o * in.channels + c) * k + dy) * k + dx] * in.at(c, y + dy, x + dx);
            }
          }
        }
        out.values.push_back(std::max(sum, 0.0));
      }
    }
  }
  return out;
}

// 2 x 2 max-pooling, stride 2: an odd last row or column is dropped.
Planes MaxPool(const Planes& in) {
  Planes out{in.channels, in.height / 2, in.width / 2, {}};
  for (int64_t c = 0; c < out.channels; ++c) {
    for (int64_t y = 0; y < out.height; ++y) {
      for (int64_t x = 0; x < out.width; ++x) {
        out.values.push_back(
            std::max({in.at(c, 2 * y, 2 * x), in.at(c, 2 * y, 2 * x + 1),
                      in.at(c, 2 * y + 1, 2 * x), in.at(c, 2 * y + 1, 2 * x + 1)}));
      }
    }
  }
  return out;
}

// The cnn's embedding worked out by hand from its flat parameters: 3 x 3 convolutions with ReLU,
// each followed by a 2 x 2 max-pool (26 -> 13, then 11 -> 5: the pool drops the odd row and
// column), and fc1 with ReLU. Embed runs without autograd, where the model pools by a faster
// path than training's max_pool2d; it must still be this network.
TEST(BuiltinModels, CnnEmbeddingIsTheTextbookNetwork) {
  auto m = Make(Spec("cnn"));
  ASSERT_TRUE(m);
  const std::vector<float> w = m->Parameters();
  std::map<std::string, const float*> tensor;
  for (const TensorSpec& t : m->Layout().tensors) tensor[t.name] = w.data() + t.offset;
  Dataset d = Images(3);
  std::mt19937 rng(7);
  std::normal_distribution<float> pixel;
  for (float& x : d.features) x = pixel(rng);
  const std::vector<size_t> rows = {0, 1, 2};
  Result<std::vector<float>> e = Embed(*m, d, rows);
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  ASSERT_EQ(e->size(), 3u * 64);
  for (size_t image = 0; image < rows.size(); ++image) {
    Planes in{1, 28, 28, {}};
    in.values.assign(d.features.begin() + image * 784, d.features.begin() + (image + 1) * 784);
    Planes h = MaxPool(ConvRelu(in, tensor["conv1.weight"], tensor["conv1.bias"], 16, 3));
    h = MaxPool(ConvRelu(h, tensor["conv2.weight"], tensor["conv2.bias"], 32, 3));
    ASSERT_EQ(h.values.size(), 32u * 5 * 5);
    for (size_t j = 0; j < 64; ++j) {
      double sum = tensor["fc1.bias"][j];
      for (size_t i = 0; i < h.values.size(); ++i) {
        sum += tensor["fc1.weight"][j * h.values.size() + i] * h.values[i];
      }
      EXPECT_NEAR((*e)[image * 64 + j], std::max(sum, 0.0), 1e-4) << "image " << image << ", " << j;
    }
  }
}

// In-process nodes are threads that embed and evaluate at the same time, through one LibTorch
// and one system BLAS (a BLAS that is not safe for threads corrupts a product now and then).
// Every thread must get exactly what it gets alone.
TEST(BuiltinModels, EmbeddingsOnManyThreadsAtOnceEqualTheSequentialOnes) {
  constexpr int kThreads = 6, kRepeats = 20;
  Dataset d = Images(100);
  std::mt19937 rng(3);
  std::normal_distribution<float> pixel;
  for (float& x : d.features) x = pixel(rng);
  std::vector<size_t> rows(d.size());
  std::iota(rows.begin(), rows.end(), 0);
  std::vector<std::unique_ptr<Model>> models;
  std::vector<std::vector<float>> alone;
  for (int t = 0; t < kThreads; ++t) {
    models.push_back(Make(Spec(t % 2 == 0 ? "cnn" : "mlp", 10 + t)));
    ASSERT_TRUE(models.back());
    Result<std::vector<float>> e = Embed(*models.back(), d, rows);
    ASSERT_TRUE(e.ok()) << e.status().ToString();
    alone.push_back(*e);
  }
  std::atomic<int> differing{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int k = 0; k < kRepeats; ++k) {
        Result<std::vector<float>> e = Embed(*models[t], d, rows);
        if (!e.ok() || *e != alone[t]) ++differing;
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(differing.load(), 0) << "of " << kThreads * kRepeats << " embeddings";
}

TEST(BuiltinModels, SameSeedSameWeightsDifferentSeedDifferentWeights) {
  for (const char* name : {"linear", "mlp", "cnn", "cnn_emd"}) {
    auto a = Make(Spec(name, 5)), b = Make(Spec(name, 5)), c = Make(Spec(name, 6));
    EXPECT_EQ(a->Parameters(), b->Parameters()) << name;
    EXPECT_NE(a->Parameters(), c->Parameters()) << name;
  }
}

TEST(BuiltinModels, InitialWeightsAreTheSameInEveryProcessAndBuild) {
  // Golden values: a node elsewhere (another process, machine or build) must start from exactly
  // these weights for seed 7. They come from SeededRandom, not from torch's generator.
  const std::vector<float> golden = {-0.069677785f,  -0.305609912f,  0.253463298f,   0.0524497218f,
                                     -0.0300783869f, -0.158473417f,  -0.0202683005f, -0.108733818f,
                                     -0.231315359f,  -0.0549342036f, -0.250730693f};
  EXPECT_EQ(Make(Spec("linear", 7))->Parameters(), golden);
}

TEST(BuiltinModels, InitialWeightsFollowPyTorchsDefaultBounds) {
  auto m = Make(Spec("mlp"));
  const std::vector<float> w = m->Parameters();
  const float bound = 1.0f / std::sqrt(784.0f);
  const auto fc1 = std::span<const float>(w).first(784 * 200);
  EXPECT_LE(*std::max_element(fc1.begin(), fc1.end()), bound);
  EXPECT_GE(*std::min_element(fc1.begin(), fc1.end()), -bound);
  EXPECT_GT(*std::max_element(fc1.begin(), fc1.end()), 0.95f * bound);
}

TEST(CreateModel, UnknownNamesAndImpossibleShapesAreRejected) {
  EXPECT_EQ(NamesOf(ArchitectureNames()),
            (std::vector<std::string>{"linear", "mlp", "cnn", "cnn_emd", "torchscript"}));
  EXPECT_FALSE(ValueNamed(ArchitectureNames(), "resnet").has_value());
  ModelSpec spec = Spec("cnn");
  spec.input_shape = {1, 6, 6};
  EXPECT_EQ(CreateModel(spec).status().code(), ErrorCode::kInvalidArgument);
  spec = Spec("mlp");
  spec.num_outputs = 0;
  EXPECT_EQ(CreateModel(spec).status().code(), ErrorCode::kInvalidArgument);
}

void ExpectScriptError(const std::string& path, ErrorCode code, const std::string& mention) {
  ModelSpec spec = Spec("torchscript");
  spec.torchscript_path = path;
  Result<std::unique_ptr<Model>> m = CreateModel(spec);
  EXPECT_EQ(m.status().code(), code) << m.status().ToString();
  EXPECT_NE(m.status().message().find(mention), std::string::npos) << m.status().ToString();
  EXPECT_NE(m.status().message().find(path), std::string::npos) << m.status().ToString();
}

TEST(TorchScriptModel, BadFilesSayWhatIsWrong) {
  const std::string dir = testing::TempDir();
  ExpectScriptError(dir + "/absent.pt", ErrorCode::kNotFound, "no such TorchScript file");
  testing::WriteFile(dir + "/garbage.pt", "this is not a zip archive at all");
  ExpectScriptError(dir + "/garbage.pt", ErrorCode::kMalformed, "not a TorchScript archive");
  ExpectScriptError(kFixtureDir + "/script_no_forward.pt", ErrorCode::kInvalidArgument,
                    "no forward method");
  ExpectScriptError(kFixtureDir + "/script_wrong_output.pt", ErrorCode::kInvalidArgument,
                    "to [2, 5], but the task needs [2, 10]");
  ModelSpec spec = Spec("torchscript");
  spec.input_shape = {1, 20, 20};
  Result<std::unique_ptr<Model>> m = CreateModel(spec);
  EXPECT_NE(m.status().message().find("forward fails on an input of shape [2, 1, 20, 20]"),
            std::string::npos)
      << m.status().ToString();
}

TEST(TorchScriptModel, StartsFromTheFilesWeightsOnEveryLoad) {
  ModelSpec a = Spec("torchscript", 1), b = Spec("torchscript", 2);
  EXPECT_EQ(Make(a)->Parameters(), Make(b)->Parameters());
}

}  // namespace
}  // namespace meshlearn::training
