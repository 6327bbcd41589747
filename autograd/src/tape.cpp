// The tape: recording ops, and the reverse walk that turns an output gradient into leaf gradients.
#include "tinygpt/autograd/tape.hpp"

#include <chrono>
#include <unordered_map>
#include <unordered_set>

#include "ops/common.hpp"
#include "tensor_impl.hpp"
#include "tinygpt/autograd/dispatch.hpp"
#include "tinygpt/autograd/ops.hpp"
#include "tinygpt/autograd/profile.hpp"

namespace tinygpt {
namespace {
thread_local bool g_grad_enabled = true;
}

// Left to itself, a chain of nodes would be destroyed by recursion, one stack frame per op, and
// a graph thousands of ops deep (a long unrolled loop) would overflow the stack. Instead each
// node hands the parents that only it keeps alive to a local worklist and frees them one by one.
detail::Node::~Node() {
  std::vector<std::shared_ptr<Node>> doomed;
  auto adopt_sole_parents = [&](Node& node) {
    for (Edge& edge : node.edges) {
      if (edge.node && edge.node.use_count() == 1) doomed.push_back(std::move(edge.node));
    }
  };
  adopt_sole_parents(*this);
  while (!doomed.empty()) {
    std::shared_ptr<Node> node = std::move(doomed.back());
    doomed.pop_back();
    adopt_sole_parents(*node);
  }  // `node` dies here with no sole-owned parents left, so its own destructor does not recurse
}

bool grad_enabled() { return g_grad_enabled; }

NoGradGuard::NoGradGuard() : previous_(g_grad_enabled) { g_grad_enabled = false; }
NoGradGuard::~NoGradGuard() { g_grad_enabled = previous_; }

Tensor record(const char* op, Tensor output, std::vector<Tensor> inputs, BackwardFn backward) {
  if (!g_grad_enabled) return output;
  if (detail::g_op_profiling) profile_mark(op);
  bool any = false;
  for (const Tensor& in : inputs) any = any || (in.defined() && in.requires_grad());
  if (!any) return output;

  auto& out = *output.impl();
  if (out.grad_fn || out.requires_grad) {
    throw GraphError(fmt::format(
        "record('{}'): the output must be a new tensor, not an input or an already recorded one",
        op));
  }
  auto node = std::make_shared<detail::Node>();
  node->op = op;
  node->backward = std::move(backward);
  node->edges.reserve(inputs.size());
  for (const Tensor& in : inputs) {
    detail::Node::Edge edge;
    if (in.defined() && in.requires_grad()) {
      const auto& impl = in.impl();
      if (impl->grad_fn) {
        edge.node = impl->grad_fn;
      } else {
        edge.leaf = impl;
      }
      edge.shape = impl->shape;
      edge.dtype = impl->dtype;
    }
    node->edges.push_back(std::move(edge));
  }
  out.requires_grad = true;
  out.grad_fn = std::move(node);
  return output;
}

namespace {

// Nodes reachable from `root`, each after every node that consumes its output.
std::vector<detail::Node*> topological_order(detail::Node* root) {
  std::vector<detail::Node*> order;
  std::unordered_set<detail::Node*> seen{root};
  std::vector<std::pair<detail::Node*, size_t>> stack{{root, 0}};
  while (!stack.empty()) {
    auto& [node, next_edge] = stack.back();
    if (next_edge < node->edges.size()) {
      detail::Node* child = node->edges[next_edge++].node.get();
      if (child && seen.insert(child).second) stack.emplace_back(child, 0);
    } else {
      order.push_back(node);
      stack.pop_back();
    }
  }
  return {order.rbegin(), order.rend()};
}

// True when `t` is the only handle to its buffer: no other tensor, saved value or gradient
// slot can see it, so it may be updated in place or handed over without a copy.
bool sole_owner(const Tensor& t) {
  return t.impl().use_count() == 1 && t.impl()->storage.use_count() == 1;
}

// slot += grad, in place when nothing else sees slot's buffer (the same arithmetic as add).
void accumulate(Tensor& slot, const Tensor& grad) {
  if (!slot.defined()) {
    slot = grad;
  } else if (sole_owner(slot) && slot.numel() == grad.numel()) {
    dispatch_float(slot.dtype(), "backward", [&](auto tag) {
      using T = decltype(tag);
      T* out = slot.data<T>();
      const T* in = grad.data<T>();
      const int64_t n = slot.numel();
      detail::for_range(n > detail::kParallelGrain, n, [&](int64_t first, int64_t last) {
        for (int64_t i = first; i < last; ++i) out[i] += in[i];
      });
    });
  } else {
    slot = add(slot, grad);
  }
}

void run_backward(const detail::TensorImpl& root, const Tensor& root_grad, bool retain_graph) {
  const auto order = topological_order(root.grad_fn.get());
  for (detail::Node* node : order) {
    if (node->released) {
      throw GraphError(fmt::format(
          "backward: the graph through '{}' was already freed by an earlier backward; pass "
          "retain_graph=true to the first backward to call it again",
          node->op));
    }
  }

  NoGradGuard no_grad;
  std::unordered_map<detail::Node*, Tensor> grads{{root.grad_fn.get(), root_grad}};
  for (detail::Node* node : order) {
    auto found = grads.find(node);
    if (found == grads.end()) continue;  // every path to it returned no gradient
    const Tensor grad_out = std::move(found->second);
    grads.erase(found);

    using Clock = std::chrono::steady_clock;
    const bool profiling = detail::g_op_profiling;
    const auto started = profiling ? Clock::now() : Clock::time_point{};
    std::vector<Tensor> grad_in = node->backward(grad_out);
    const auto computed = profiling ? Clock::now() : Clock::time_point{};
    if (grad_in.size() != node->edges.size()) {
      throw GraphError(fmt::format("backward of '{}' returned {} gradients for {} inputs",
                                   node->op, grad_in.size(), node->edges.size()));
    }
    for (size_t i = 0; i < grad_in.size(); ++i) {
      const auto& edge = node->edges[i];
      Tensor& g = grad_in[i];
      if (!edge.active() || !g.defined()) continue;
      if (g.shape() != edge.shape || g.dtype() != edge.dtype) {
        throw GraphError(fmt::format(
            "backward of '{}' returned a gradient {} {} for input {} of shape {} {}", node->op,
            g.shape().str(), dtype_name(g.dtype()), i, edge.shape.str(), dtype_name(edge.dtype)));
      }
      if (edge.node) {
        accumulate(grads[edge.node.get()], g);
      } else if (edge.leaf->grad.defined()) {
        accumulate(edge.leaf->grad, g);
      } else if (sole_owner(g)) {
        edge.leaf->grad = std::move(g);  // nobody else sees this buffer: no copy needed
      } else {
        // A private copy: the same gradient buffer may be handed to several inputs (add), and
        // optimisers scale .grad in place.
        edge.leaf->grad = g.clone();
      }
    }
    if (!retain_graph) {
      node->backward = nullptr;  // frees the buffers the op saved
      node->released = true;
    }
    if (profiling) {
      const auto done = Clock::now();
      detail::profile_backward(node->op, std::chrono::duration<double>(computed - started).count());
      detail::profile_backward("(accumulate, free)",
                               std::chrono::duration<double>(done - computed).count());
    }
  }
  profile_mark(nullptr);  // the next forward op is not charged for this backward
}

}  // namespace

void Tensor::backward(bool retain_graph) const {
  if (numel() != 1) {
    throw GraphError(fmt::format(
        "backward: called without a gradient on a tensor of shape {}; only a single-element "
        "tensor can be its own seed, pass backward(grad) otherwise",
        shape().str()));
  }
  backward(Tensor::ones(shape(), dtype()), retain_graph);
}

void Tensor::backward(const Tensor& grad, bool retain_graph) const {
  auto& impl = checked();  // throws on an undefined tensor rather than dereferencing null
  if (!impl.requires_grad) {
    throw GraphError(fmt::format("backward: tensor of shape {} does not require grad",
                                 impl.shape.str()));
  }
  if (grad.shape() != impl.shape || grad.dtype() != impl.dtype) {
    throw GraphError(fmt::format("backward: gradient {} {} does not match tensor {} {}",
                                 grad.shape().str(), dtype_name(grad.dtype()), impl.shape.str(),
                                 dtype_name(impl.dtype)));
  }
  if (!impl.grad_fn) {  // a leaf is its own gradient
    auto& slot = impl.grad;
    slot = slot.defined() ? add(slot, grad) : grad.clone();
    return;
  }
  run_backward(impl, grad, retain_graph);
}

}  // namespace tinygpt
