#pragma once
// Everything of the autograd library: tensors, the tape, the ops, gradcheck.
#include "tinygpt/autograd/dtype.hpp"
#include "tinygpt/autograd/error.hpp"
#include "tinygpt/autograd/generator.hpp"
#include "tinygpt/autograd/gradcheck.hpp"
#include "tinygpt/autograd/memory.hpp"
#include "tinygpt/autograd/ops.hpp"
#include "tinygpt/autograd/profile.hpp"
#include "tinygpt/autograd/shape.hpp"
#include "tinygpt/autograd/tape.hpp"
#include "tinygpt/autograd/tensor.hpp"
#include "tinygpt/autograd/threads.hpp"
#include "tinygpt/version.hpp"
