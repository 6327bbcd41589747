#pragma once
// bench --profile's tables: each op's forward and backward time (and GFLOP/s where its products
// are counted), and each product shape's time and GFLOP/s inside the step beside the same
// product's alone, against the peak of the units the products run on.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tinygpt/autograd/precision.hpp"
#include "tinygpt/autograd/profile.hpp"

namespace tinygpt::train {

struct StepProfile {
  std::vector<OpProfileEntry> ops;
  std::vector<ProductProfileEntry> products;
  std::vector<double> alone_seconds;       // per product: the best of a few runs alone
  std::vector<double> alone_cold_seconds;  // the same, operands and output flushed to memory first
};

// What the op profiler gathered since its reset (the alone times still empty).
StepProfile read_step_profile();

// Times every product shape of `profile` alone in `precision`, with its operands in cache and
// flushed (time_product_alone), filling the alone times. Its buffers count in the peak RSS: read
// that first.
void time_products_alone(StepProfile& profile, Precision precision);

// `steps`: the timed steps the profile covers; `peak_gflops`: the peak of the units the products
// ran on (NaN: none measured). The json holds "profile" (the ops) and "products".
nlohmann::json step_profile_json(const StepProfile& profile, int64_t steps, double peak_gflops);
std::string step_profile_text(const StepProfile& profile, int64_t steps, double peak_gflops);

}  // namespace tinygpt::train
