// PMI-1's barrier, spoken by nodempi itself over the process manager's
// socket that MPICH's PMI client inherited (PMI_FD), for the one place the
// library's own barrier comes too late: MPI_Finalize of MPICH before 4.2
// over UCX (native/core/mpi/mpi.cc, finalize). Hydra's mpiexec and Slurm's
// srun --mpi=pmi2 both answer it on PMI_FD (test/cluster runs MPICH under
// both).
#pragma once
#include <string_view>

namespace nodempi::mpi::pmi {

// Whether MPI_Finalize of the library that reports `library_version`
// (MPI_Get_library_version's text) closes its UCX endpoints and then waits
// in PMI's barrier without progressing them: MPICH 3.4 to 4.1 on ch4:ucx.
bool finalize_needs_barrier(std::string_view library_version);

// Every process of the job enters PMI's barrier and leaves it once all
// have. False, and nothing written, when PMI_FD does not name a socket;
// false when the exchange fails.
bool barrier();

}  // namespace nodempi::mpi::pmi
