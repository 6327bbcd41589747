#pragma once
// The processes of one data-parallel run and the few collectives training needs, on Open MPI
// when the build found it (`mpirun -np P build/tinygpt train ...`), else a single process.
//
//   distributed::Session session(argc, argv);    // in main: MPI_Init only when started by mpirun
//   distributed::Communicator& world = distributed::world();
//   world.allreduce_sum(grads, n);        // every rank ends with the same sum
//
// Sums are taken in rank order, (x_0 + x_1) + x_2 + ..., for every element whatever the timing,
// so every rank, and every run, gets the same bits; with two ranks that is also the sum a
// single process forms when it accumulates two micro-batches (a + b == b + a exactly).
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "tinygpt/autograd/error.hpp"

namespace tinygpt::distributed {

// An error every rank raises at the same point with the same message (a failed setup on any
// rank, a failed checkpoint on rank 0): rank 0 reports it, the others leave quietly.
class CollectiveError : public Error {
 public:
  using Error::Error;
};

// What the collectives of this process have cost so far.
struct CommStats {
  double seconds = 0.0;  // wall time inside allreduce_sum
  int64_t bytes = 0;     // bytes reduced (the payload, not the traffic)
  int64_t calls = 0;
};

class Communicator {
 public:
  Communicator() = default;  // a single process: rank 0 of 1, every collective a no-op

  int rank() const { return rank_; }
  int size() const { return size_; }
  // Ranks sharing this machine (they share its cores).
  int local_size() const { return local_size_; }
  bool is_root() const { return rank_ == 0; }

  // data[i] = sum over ranks of data[i], in rank order, in buckets of a fixed size: each
  // bucket is scattered across the ranks (rank r sums the r-th P-th of it), then gathered back,
  // so each rank sends and receives 2 (P - 1) / P of the bytes, as a ring all-reduce does.
  void allreduce_sum(float* data, int64_t n);
  void allreduce_sum(double* data, int64_t n);

  // Runs `f` on every rank, then agrees: if it threw on any rank, every rank throws a
  // CollectiveError with the message of the lowest failing rank ("rank 2: ..." unless 0). On a
  // single process `f` just runs and its exceptions pass through unchanged.
  void together(const std::function<void()>& f);

  // Ends every rank of the run at once (MPI_Abort); for an error only this rank has seen.
  [[noreturn]] void abort(int code);

  const CommStats& stats() const { return stats_; }

 private:
  friend class Session;
  template <class T>
  void reduce_in_rank_order(T* data, int64_t n, std::vector<T>& scratch);

  int rank_ = 0;
  int size_ = 1;
  int local_size_ = 1;
  bool mpi_ = false;
  std::vector<float> scratch_f32_;  // grown once to a bucket's size, then reused
  std::vector<double> scratch_f64_;
  CommStats stats_;
};

// MPI's lifetime. When this process was started by mpirun (Open MPI's OMPI_COMM_WORLD_SIZE is
// set) and the build has MPI, MPI_Init here and MPI_Finalize at the end; otherwise nothing, so
// a plain run neither pays for nor depends on an MPI runtime. One per program, in main.
class Session {
 public:
  Session(int& argc, char**& argv);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;
};

// The run's ranks: MPI_COMM_WORLD inside a Session started by mpirun, else one process.
Communicator& world();
// A communicator of one process, for code that is not part of a data-parallel run.
Communicator& single_process();

// Whether this build can run data-parallel (it found MPI at configure time).
bool mpi_available();
// Whether this process was started by mpirun (so ranks beyond one are meant).
bool launched_by_mpirun();

}  // namespace tinygpt::distributed
