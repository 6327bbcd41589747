// The communicator on Open MPI (TINYGPT_HAVE_MPI), and the single process it falls back to.
#include "tinygpt/distributed/communicator.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <exception>

#include <fmt/format.h>

#ifdef TINYGPT_HAVE_MPI
#include <mpi.h>
#endif

namespace tinygpt::distributed {
namespace {

Communicator g_world;

// Floats per bucket: 4 MB, large enough that a bucket's messages run at the link's bandwidth,
// small enough that the scratch buffers stay modest whatever the model's size.
constexpr int64_t kBucketElements = int64_t{1} << 20;

#ifdef TINYGPT_HAVE_MPI
// An error's message parts as bytes another rank reads back whole (each part's kind, then its
// text and value, each after its length), so the rank that reports it can still leave out the
// operation and name the settings as its program does.
std::string encoded(const std::vector<MessagePart>& parts) {
  std::string out;
  for (const MessagePart& part : parts) {
    out += static_cast<char>(part.kind);
    for (const std::string* field : {&part.text, &part.value}) out += std::to_string(field->size()) + ':' + *field;
  }
  return out;
}

std::vector<MessagePart> decoded(const std::string& bytes) {
  std::vector<MessagePart> parts;
  size_t at = 0;
  const auto field = [&] {
    const size_t colon = bytes.find(':', at);
    const size_t length = std::stoul(bytes.substr(at, colon - at));
    at = colon + 1 + length;
    return bytes.substr(colon + 1, length);
  };
  while (at < bytes.size()) {
    const auto kind = static_cast<MessagePart::Kind>(bytes[at++]);
    MessagePart part(field());
    part.kind = kind;
    part.value = field();
    parts.push_back(std::move(part));
  }
  return parts;
}

MPI_Datatype mpi_type(float) { return MPI_FLOAT; }
MPI_Datatype mpi_type(double) { return MPI_DOUBLE; }

void check(int code, const char* call) {
  if (code == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  throw Error(fmt::format("{} failed: {}", call, std::string(text, static_cast<size_t>(length))));
}
#endif

}  // namespace

bool mpi_available() {
#ifdef TINYGPT_HAVE_MPI
  return true;
#else
  return false;
#endif
}

bool launched_by_mpirun() { return std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr; }

Communicator& world() { return g_world; }

Communicator& single_process() {
  static Communicator single;
  return single;
}

Session::Session(int& argc, char**& argv) {
#ifdef TINYGPT_HAVE_MPI
  if (!launched_by_mpirun()) return;
  check(MPI_Init(&argc, &argv), "MPI_Init");
  // Errors come back as codes (turned into exceptions by check) instead of ending the process.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  Communicator& w = g_world;
  w.mpi_ = true;
  MPI_Comm_rank(MPI_COMM_WORLD, &w.rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &w.size_);
  MPI_Comm node;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, w.rank_, MPI_INFO_NULL, &node);
  MPI_Comm_size(node, &w.local_size_);
  MPI_Comm_free(&node);
#else
  (void)argc;
  (void)argv;
#endif
}

Session::~Session() {
#ifdef TINYGPT_HAVE_MPI
  if (g_world.mpi_) MPI_Finalize();
#endif
}

template <class T>
void Communicator::reduce_in_rank_order(T* data, int64_t n, std::vector<T>& scratch) {
#ifdef TINYGPT_HAVE_MPI
  const auto start = std::chrono::steady_clock::now();
  const int64_t P = size_;
  const int64_t chunk_max = (std::min(n, kBucketElements) + P - 1) / P;
  // (P, chunk) send, (P, chunk) receive, (chunk) this rank's sums.
  scratch.resize(static_cast<size_t>((2 * P + 1) * chunk_max));
  T* send = scratch.data();
  T* recv = send + P * chunk_max;
  T* mine = recv + P * chunk_max;
  for (int64_t offset = 0; offset < n; offset += kBucketElements) {
    const int64_t m = std::min(kBucketElements, n - offset);
    const int64_t chunk = (m + P - 1) / P;
    std::copy(data + offset, data + offset + m, send);
    std::fill(send + m, send + P * chunk, T(0));  // the last chunk's padding
    // recv[r][j] = rank r's element rank_ * chunk + j.
    check(MPI_Alltoall(send, static_cast<int>(chunk), mpi_type(T()), recv, static_cast<int>(chunk),
                       mpi_type(T()), MPI_COMM_WORLD),
          "MPI_Alltoall");
    for (int64_t j = 0; j < chunk; ++j) {
      T sum = recv[j];
      for (int64_t r = 1; r < P; ++r) sum += recv[r * chunk + j];
      mine[j] = sum;
    }
    check(MPI_Allgather(mine, static_cast<int>(chunk), mpi_type(T()), send, static_cast<int>(chunk),
                        mpi_type(T()), MPI_COMM_WORLD),
          "MPI_Allgather");
    std::copy(send, send + m, data + offset);
  }
  stats_.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  stats_.bytes += n * static_cast<int64_t>(sizeof(T));
  ++stats_.calls;
#else
  (void)data;
  (void)n;
  (void)scratch;
#endif
}

void Communicator::allreduce_sum(float* data, int64_t n) {
  if (size_ > 1) reduce_in_rank_order(data, n, scratch_f32_);
}

void Communicator::allreduce_sum(double* data, int64_t n) {
  if (size_ > 1) reduce_in_rank_order(data, n, scratch_f64_);
}

void Communicator::together(const std::function<void()>& f) {
  if (size_ == 1) {
    f();
    return;
  }
#ifdef TINYGPT_HAVE_MPI
  std::string error;  // encoded()
  try {
    f();
  } catch (const Error& e) {
    error = encoded(e.parts());
  } catch (const std::exception& e) {
    error = encoded({std::string(*e.what() != '\0' ? e.what() : "unknown error")});
  }
  int failed = error.empty() ? size_ : rank_;  // the lowest failing rank, or size_ for none
  check(MPI_Allreduce(MPI_IN_PLACE, &failed, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD), "MPI_Allreduce");
  if (failed == size_) return;
  int length = static_cast<int>(error.size());
  check(MPI_Bcast(&length, 1, MPI_INT, failed, MPI_COMM_WORLD), "MPI_Bcast");
  error.resize(static_cast<size_t>(length));
  check(MPI_Bcast(error.data(), length, MPI_CHAR, failed, MPI_COMM_WORLD), "MPI_Bcast");
  throw CollectiveError(failed == 0 ? "" : fmt::format("rank {}: ", failed), Error(decoded(error)));
#endif
}

void Communicator::abort(int code) {
#ifdef TINYGPT_HAVE_MPI
  if (mpi_) MPI_Abort(MPI_COMM_WORLD, code);
#endif
  std::_Exit(code);
}

}  // namespace tinygpt::distributed
