// PNG pictures (tools/plot/render.h): the files decode, have the promised size, and show the
// data: in-cluster cells look different from cross-cluster cells, NaN is grey, lines are drawn.

#include "tools/plot/render.h"

#include <cairo.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>

#include <gtest/gtest.h>

#include "tests/tools/plot/plot_test_support.h"

namespace meshlearn::plot {
namespace {

using testing::BlockMatrix;
using testing::InterleavedClusters;
using testing::TempDir;

struct Pixel {
  int r, g, b;
  int Brightness() const { return r + g + b; }
  int DistanceTo(const Pixel& o) const {
    return std::abs(r - o.r) + std::abs(g - o.g) + std::abs(b - o.b);
  }
};

// A decoded PNG.
class Picture {
 public:
  explicit Picture(const std::string& path)
      : surface_(cairo_image_surface_create_from_png(path.c_str()), cairo_surface_destroy) {}
  bool ok() const { return cairo_surface_status(surface_.get()) == CAIRO_STATUS_SUCCESS; }
  int width() const { return cairo_image_surface_get_width(surface_.get()); }
  int height() const { return cairo_image_surface_get_height(surface_.get()); }
  Pixel At(int x, int y) const {
    const unsigned char* data = cairo_image_surface_get_data(surface_.get());
    const int stride = cairo_image_surface_get_stride(surface_.get());
    uint32_t v;
    std::memcpy(&v, data + static_cast<size_t>(y) * stride + static_cast<size_t>(x) * 4, 4);
    return {static_cast<int>((v >> 16) & 0xff), static_cast<int>((v >> 8) & 0xff),
            static_cast<int>(v & 0xff)};
  }
  // How many pixels are within `tolerance` of `colour`.
  int Count(const Pixel& colour, int tolerance) const {
    int n = 0;
    for (int y = 0; y < height(); ++y) {
      for (int x = 0; x < width(); ++x) n += At(x, y).DistanceTo(colour) <= tolerance ? 1 : 0;
    }
    return n;
  }

 private:
  std::unique_ptr<cairo_surface_t, decltype(&cairo_surface_destroy)> surface_;
};

TEST(HeatmapPngTest, ClusterBlocksShowAsBrightCellsOnDarkBackground) {
  const std::map<std::string, int> clusters = InterleavedClusters(12, 3);
  const LabeledMatrix m = OrderByClusters(BlockMatrix(12, 3), clusters);
  HeatmapOptions options;
  options.title = "12 nodes, 3 clusters";
  options.clusters = &clusters;
  const std::string path = TempDir() + "/heatmap.png";
  ASSERT_TRUE(RenderHeatmapPng(m, path, options).ok());

  const Picture picture(path);
  ASSERT_TRUE(picture.ok());
  const HeatmapLayout layout = ComputeHeatmapLayout(m, options);
  EXPECT_EQ(picture.width(), layout.width);
  EXPECT_EQ(picture.height(), layout.height);
  EXPECT_EQ(layout.cell, 40);
  EXPECT_EQ(layout.label_step, 1u);

  // Rows 0..3 are cluster 0. (0, 1) is an in-cluster count of 20, (0, 5) a cross count of 1,
  // (0, 0) the diagonal 0. Viridis: the maximum is bright yellow, small values dark purple.
  const Pixel in_block = picture.At(layout.CellCenterX(1), layout.CellCenterY(0));
  const Pixel off_block = picture.At(layout.CellCenterX(5), layout.CellCenterY(0));
  const Pixel diagonal = picture.At(layout.CellCenterX(0), layout.CellCenterY(0));
  EXPECT_GT(in_block.DistanceTo(off_block), 300);
  EXPECT_GT(in_block.Brightness(), 2 * off_block.Brightness());
  EXPECT_GT(in_block.r, 200);  // yellow
  EXPECT_GT(in_block.g, 200);
  EXPECT_LT(diagonal.Brightness(), off_block.Brightness() + 30);
  // The same in another cluster's block, and symmetric across the diagonal.
  EXPECT_LT(in_block.DistanceTo(picture.At(layout.CellCenterX(9), layout.CellCenterY(10))), 10);
  EXPECT_LT(off_block.DistanceTo(picture.At(layout.CellCenterX(0), layout.CellCenterY(5))), 10);
}

TEST(HeatmapPngTest, NaNCellsAreGreyAndConstantMatrixDraws) {
  LabeledMatrix m = BlockMatrix(4, 2);
  m.at(1, 2) = std::numeric_limits<double>::quiet_NaN();
  const std::string path = TempDir() + "/nan.png";
  ASSERT_TRUE(RenderHeatmapPng(m, path, {}).ok());
  const Picture picture(path);
  ASSERT_TRUE(picture.ok());
  const HeatmapLayout layout = ComputeHeatmapLayout(m, {});
  const Pixel nan = picture.At(layout.CellCenterX(2), layout.CellCenterY(1));
  EXPECT_EQ(nan.r, nan.g);
  EXPECT_EQ(nan.g, nan.b);
  EXPECT_GT(nan.r, 150);
  EXPECT_LT(nan.r, 250);

  LabeledMatrix zeros = BlockMatrix(3, 1);
  for (double& v : zeros.values) v = 0;
  EXPECT_TRUE(RenderHeatmapPng(zeros, path, {}).ok());
  EXPECT_TRUE(Picture(path).ok());
}

// For every size the picture stays within about 2000 px, cells stay at least 3 px, and labels
// thin out so that they do not overlap.
class HeatmapSizeTest : public ::testing::TestWithParam<int> {};

TEST_P(HeatmapSizeTest, ImageFitsAndLabelsThinOut) {
  const int n = GetParam();
  const std::map<std::string, int> clusters = InterleavedClusters(n, 3);
  const LabeledMatrix m = OrderByClusters(BlockMatrix(n, 3), clusters);
  HeatmapOptions options;
  options.title = "size sweep";
  options.clusters = &clusters;
  const HeatmapLayout layout = ComputeHeatmapLayout(m, options);
  EXPECT_GE(layout.cell, 3);
  EXPECT_LE(layout.cell, 40);
  EXPECT_LE(layout.width, 2100);
  EXPECT_LE(layout.height, 2100);
  EXPECT_GE(static_cast<double>(layout.cell * layout.label_step), 9.0);  // label spacing >= font
  const std::string path = TempDir() + "/heatmap.png";
  ASSERT_TRUE(RenderHeatmapPng(m, path, options).ok());
  const Picture picture(path);
  ASSERT_TRUE(picture.ok());
  EXPECT_EQ(picture.width(), layout.width);
  EXPECT_EQ(picture.height(), layout.height);
  // Ordered by cluster, row 0 and the last column are in different clusters; for n >= 6 so are
  // row 0 and column 1 in the same one.
  const Pixel off_block = picture.At(layout.CellCenterX(n - 1), layout.CellCenterY(0));
  const Pixel in_block = picture.At(layout.CellCenterX(1), layout.CellCenterY(0));
  if (n >= 6) {
    EXPECT_GT(in_block.DistanceTo(off_block), 300) << "n = " << n;
    EXPECT_LT(off_block.Brightness(), 300);  // a small count is dark
  }
}

INSTANTIATE_TEST_SUITE_P(Sizes, HeatmapSizeTest, ::testing::Values(2, 12, 33, 100, 200, 250, 400));

TEST(HeatmapPngTest, BadArgumentsAndUnwritablePathAreErrors) {
  EXPECT_EQ(RenderHeatmapPng(LabeledMatrix{}, TempDir() + "/x.png", {}).code(),
            ErrorCode::kInvalidArgument);
  LabeledMatrix ragged = BlockMatrix(3, 1);
  ragged.values.pop_back();
  EXPECT_EQ(RenderHeatmapPng(ragged, TempDir() + "/x.png", {}).code(), ErrorCode::kInvalidArgument);
  const Status status = RenderHeatmapPng(BlockMatrix(3, 1), TempDir() + "/no/dir/x.png", {});
  EXPECT_EQ(status.code(), ErrorCode::kIoError);
  EXPECT_NE(status.message().find("no/dir/x.png"), std::string::npos);
}

std::vector<Series> ThreeMethods() {
  std::vector<Series> series = {{"random", {}, {}}, {"oracle", {}, {}}, {"cos_weights", {}, {}}};
  for (int t = 0; t <= 50; ++t) {
    series[0].x.push_back(t);
    series[0].y.push_back(120 - 0.2 * t);
    series[1].x.push_back(t);
    series[1].y.push_back(10.4 + 200 * std::exp(-0.3 * t));
    series[2].x.push_back(t);
    series[2].y.push_back(10.5 + 220 * std::exp(-0.25 * t));
  }
  return series;
}

TEST(CurvesPngTest, DrawsEverySeriesInItsColour) {
  const std::string path = TempDir() + "/curves.png";
  ChartOptions options;
  options.title = "Synthetic concept shift";
  options.y_label = "mean test MSE";
  ASSERT_TRUE(RenderCurvesPng(ThreeMethods(), path, options).ok());
  const Picture picture(path);
  ASSERT_TRUE(picture.ok());
  EXPECT_EQ(picture.width(), 960);
  EXPECT_EQ(picture.height(), 600);
  // Okabe-Ito blue, vermillion and bluish green: the lines and their legend samples.
  EXPECT_GT(picture.Count({0, 114, 178}, 20), 100);
  EXPECT_GT(picture.Count({213, 94, 0}, 20), 100);
  EXPECT_GT(picture.Count({0, 158, 115}, 20), 100);

  options.log_y = true;
  ASSERT_TRUE(RenderCurvesPng(ThreeMethods(), path, options).ok());
  EXPECT_TRUE(Picture(path).ok());
}

TEST(CurvesPngTest, RejectsUndrawableInput) {
  const std::string path = TempDir() + "/curves.png";
  EXPECT_EQ(RenderCurvesPng({}, path, {}).code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(RenderCurvesPng({{"a", {1, 2}, {1}}}, path, {}).code(), ErrorCode::kInvalidArgument);
  ChartOptions log;
  log.log_y = true;
  EXPECT_EQ(RenderCurvesPng({{"a", {1, 2}, {0, -1}}}, path, log).code(),
            ErrorCode::kInvalidArgument);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_TRUE(RenderCurvesPng({{"one point", {1, 2}, {nan, 3}}}, path, {}).ok());
  EXPECT_EQ(RenderCurvesPng(ThreeMethods(), TempDir() + "/no/dir/c.png", {}).code(),
            ErrorCode::kIoError);
}

}  // namespace
}  // namespace meshlearn::plot
