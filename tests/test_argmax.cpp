// The one greedy choice (edgerun/argmax.hpp), and the runner's use of it on the host.
#include <edgerun/argmax.hpp>

#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <vector>

using namespace edgerun;

TEST_CASE("argmax_logits: the highest logit, ties to the lowest id, a non-finite logit reported by id") {
    const std::vector<float> tie = {0.5f, 2.0f, -1.0f, 2.0f};
    CHECK(argmax_logits(tie.data(), 4).index == 1);
    CHECK(argmax_logits(tie.data(), 4).non_finite == -1);
    const std::vector<float> negative = {-3.0f, -1.0f, -2.0f};
    CHECK(argmax_logits(negative.data(), 3).index == 1);
    for (float bad : {std::nanf(""), std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity()}) {
        std::vector<float> row = {1.0f, 9.0f, bad, 3.0f, bad};
        CHECK(argmax_logits(row.data(), 5).non_finite == 2);  // the first one
        row[0] = bad;
        CHECK(argmax_logits(row.data(), 5).non_finite == 0);
    }
}
