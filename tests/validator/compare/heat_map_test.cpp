// The comparator's heat map (validator/compare/heat_map.hpp): its geometry at every shape, merging,
// and what the comparator records in it for planted errors at a shape that is downsampled.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include "support.hpp"
#include "reference/bounds/error_bound.hpp"
#include "validator/compare/allowance.hpp"
#include "validator/compare/comparator.hpp"

using namespace mqa;

TEST_CASE("heat map cells cover the output, each at least one element, sizes within one", "[compare][heat-map]") {
  const auto [m, n] = GENERATE(table<std::int64_t, std::int64_t>(
      {{1, 1}, {5, 3}, {32, 150}, {128, 128}, {129, 127}, {300, 7}, {1000, 65536}, {65536, 131072}}));
  CAPTURE(m, n);
  const compare::heat_map h(m, n);
  CHECK(h.rows == std::min<std::int64_t>(m, compare::heat_map::kMaxCells));
  CHECK(h.cols == std::min<std::int64_t>(n, compare::heat_map::kMaxCells));
  CHECK(h.error_over_bound.size() == static_cast<std::size_t>(h.rows * h.cols));
  auto check_axis = [](std::int64_t total, std::int64_t cells, auto begin, auto cell_of) {
    std::int64_t smallest = total, largest = 0;
    for (std::int64_t c = 0; c < cells; ++c) {
      const std::int64_t first = begin(c), end = begin(c + 1);
      smallest = std::min(smallest, end - first);
      largest = std::max(largest, end - first);
      CHECK(cell_of(first) == c);
      CHECK(cell_of(end - 1) == c);
    }
    CHECK(begin(0) == 0);
    CHECK(begin(cells) == total);
    CHECK(smallest >= 1);
    CHECK(largest - smallest <= 1);
  };
  check_axis(m, h.rows, [&](std::int64_t r) { return h.row_begin(r); }, [&](std::int64_t i) { return h.cell_row(i); });
  check_axis(n, h.cols, [&](std::int64_t c) { return h.column_begin(c); }, [&](std::int64_t j) { return h.cell_col(j); });
}

TEST_CASE("an empty output has an empty map", "[compare][heat-map]") {
  CHECK(compare::heat_map(0, 10).empty());
  CHECK(compare::heat_map(10, 0).empty());
  CHECK(compare::heat_map().empty());
}

TEST_CASE("heat maps merge by the largest ratio and the sum of counts", "[compare][heat-map]") {
  compare::heat_map a(4, 4), b(4, 4), empty;
  a.add_error(a.cell(1, 2), 0.5);
  b.add_error(b.cell(1, 2), 3.0);
  b.add_error(b.cell(0, 0), 0.25);
  a.mask_mismatches[5] = 2;
  b.mask_mismatches[5] = 3;
  b.unwritten[15] = 1;
  a.merge(b);
  CHECK(a.error_over_bound[a.cell(1, 2)] == 3.0);
  CHECK(a.error_over_bound[a.cell(0, 0)] == 0.25);
  CHECK(a.error_over_bound[a.cell(3, 3)] == compare::heat_map::kNone);
  CHECK(a.mask_mismatches[5] == 5);
  CHECK(a.unwritten[15] == 1);
  empty.merge(a);
  CHECK(empty.error_over_bound == a.error_over_bound);
  compare::heat_map other(5, 4);
  CHECK_THROWS_AS(a.merge(other), std::logic_error);
}

namespace {

// 6 rows x 300 keys (the map has 6 x 128 cells, 2 or 3 keys each); every logit positive.
struct wide_case : test::hand_case {
  wide_case() : hand_case(6, 300, 2, 16) {
    fill_patterned();
    for (std::size_t x = 0; x < weights.size(); ++x) weights[x] = 0.5f + 0.25f * static_cast<float>(x % 3);
    ke[5] = 100;  // the other rows see every key
    finish();
  }

  compare::judgement judge() const {
    compare::subject in = subject();
    in.threads = 3;  // rows split over threads: the partial maps are merged
    return compare::judge(in);
  }
};

}  // namespace

TEST_CASE("the comparator draws planted errors where they are, max-pooled", "[compare][heat-map]") {
  wide_case c;
  SECTION("the reference: every in-window cell exact, the rest nothing compared") {
    const compare::heat_map h = c.judge().stats.heat;
    REQUIRE(h.rows == 6);
    REQUIRE(h.cols == 128);
    for (std::int64_t r = 0; r < h.rows; ++r)
      for (std::int64_t col = 0; col < h.cols; ++col) {
        const bool inside = r < 5 || h.column_begin(col) < 100;
        CHECK(h.error_over_bound[h.cell(r, col)] == (inside ? 0.0 : compare::heat_map::kNone));
      }
  }
  SECTION("a tile of doubled values, a NaN, a leak and an unwritten element, each in its cells only") {
    for (std::int64_t i = 1; i <= 2; ++i)
      for (std::int64_t j = 200; j < 264; ++j) c.out(i, j) *= 2;
    c.out(3, 10) = std::numeric_limits<float>::quiet_NaN();
    for (std::int64_t j = 150; j < 160; ++j) c.out(5, j) = 1.0f;  // outside row 5's window [0, 100)
    c.out(0, 299) = std::bit_cast<float>(compare::kPoisonBits);
    const compare::judgement j = c.judge();
    const compare::heat_map& h = j.stats.heat;
    for (std::int64_t r = 0; r < h.rows; ++r)
      for (std::int64_t col = 0; col < h.cols; ++col) {
        const std::int64_t first = h.column_begin(col), end = h.column_begin(col + 1);
        CAPTURE(r, col, first, end);
        const bool tile = (r == 1 || r == 2) && end > 200 && first < 264;
        CHECK((h.error_over_bound[h.cell(r, col)] > 1) == tile);
        CHECK(h.nonfinite[h.cell(r, col)] == (r == 3 && first <= 10 && 10 < end ? 1 : 0));
        std::int64_t leaks = 0;
        for (std::int64_t key = first; key < end; ++key) leaks += r == 5 && key >= 150 && key < 160;
        CHECK(h.mask_mismatches[h.cell(r, col)] == leaks);
        CHECK(h.unwritten[h.cell(r, col)] == (r == 0 && col == 127 ? 1 : 0));
      }
  }
}

// The row's worst |error| / allowance and each cell's, element by element: every in-window value
// moved by a drawn fraction of its allowance (allowance_at, the comparator's definition of it),
// most within it, some beyond, and the comparator's figures held to the largest quotients, found
// here by dividing at every element.
TEST_CASE("the worst error over the bound and every cell's are the largest quotients of their elements",
          "[compare][heat-map]") {
  wide_case c;
  const kernels::contract contract;
  const bounds::error_bound bound = bounds::derive(contract.arithmetic(), c.head_dim, c.heads);
  const compare::key_figures keys = compare::key_figures_of(c.p);
  const compare::heat_map geometry(c.m, c.n);
  std::vector<double> cell_max(geometry.error_over_bound.size(), compare::heat_map::kNone);
  double worst = -1;
  std::int64_t worst_row = -1, worst_col = -1;
  std::uint64_t state = GENERATE(1u, 2u, 3u);
  auto draw = [&state] {  // in [0, 1)
    state = state * 6364136223846793005u + 1442695040888963407u;
    return static_cast<double>(state >> 11) * 0x1p-53;
  };
  for (std::int64_t i = 0; i < c.m; ++i) {
    const compare::row_figures row = compare::row_figures_of(c.p, i, bound.small_weight_below);
    for (std::int64_t j = c.ks[static_cast<std::size_t>(i)]; j < c.ke[static_cast<std::size_t>(i)]; ++j) {
      const float centre = c.ref(i, j);
      const double allowed = compare::allowance_at(bound, row, keys, static_cast<std::size_t>(j), centre,
                                                   c.reference.magnitude[static_cast<std::size_t>(i * c.n + j)])
                                 .allowed;
      // Mostly within the bound, now and then a little beyond it, a few exact.
      const double u = draw();
      const double fraction = u < 0.1 ? 0 : u < 0.95 ? 2 * draw() - 1 : 1 + draw() / 8;
      c.out(i, j) = static_cast<float>(centre + fraction * allowed);
      const double ratio = std::fabs(static_cast<double>(c.out(i, j)) - centre) / allowed;
      if (ratio > worst) worst = ratio, worst_row = i, worst_col = j;
      double& cell = cell_max[static_cast<std::size_t>(geometry.cell_of(i, j))];
      cell = std::max(cell, ratio);
    }
  }
  const compare::judgement j = c.judge();
  CHECK(j.stats.max_error_over_bound_seen == worst);
  CHECK(j.stats.worst_row == worst_row);
  CHECK(j.stats.worst_col == worst_col);
  std::size_t differing = 0;
  for (std::size_t cell = 0; cell < cell_max.size(); ++cell) differing += j.stats.heat.error_over_bound[cell] != cell_max[cell];
  CHECK(differing == 0);
}
