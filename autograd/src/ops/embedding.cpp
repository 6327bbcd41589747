#include "tinygpt/autograd/ops.hpp"
