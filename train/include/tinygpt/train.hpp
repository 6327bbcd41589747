#pragma once
// Everything of the train core library (tinygpt::train): optimisers and schedule, the trainer,
// checkpoints and the Run, the loss log and its reader, the memory and FLOP estimates.
#include "tinygpt/nn.hpp"
#include "tinygpt/train/checkpoint.hpp"
#include "tinygpt/train/flop_estimate.hpp"
#include "tinygpt/train/log_records.hpp"
#include "tinygpt/train/loss_log.hpp"
#include "tinygpt/train/memory_estimate.hpp"
#include "tinygpt/train/objective.hpp"
#include "tinygpt/train/optim.hpp"
#include "tinygpt/train/progress.hpp"
#include "tinygpt/train/run.hpp"
#include "tinygpt/train/trainer.hpp"
