#pragma once
// Everything of the nn library.
#include "tinygpt/autograd.hpp"
#include "tinygpt/nn/attention.hpp"
#include "tinygpt/nn/dropout.hpp"
#include "tinygpt/nn/embedding.hpp"
#include "tinygpt/autograd/ops.hpp"
#include "tinygpt/nn/gpt.hpp"
#include "tinygpt/nn/hooks.hpp"
#include "tinygpt/nn/layer_norm.hpp"
#include "tinygpt/nn/linear.hpp"
#include "tinygpt/nn/mlp.hpp"
#include "tinygpt/nn/module.hpp"
