// core/mpi/pmi.h without a process manager: which library versions
// finalize enters PMI's barrier for, and what barrier() writes to and reads
// from PMI_FD, with this program answering as Hydra does (the real one
// answers in test/mpi's late-finalize jobs under mpiexec.mpich).
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include "check.h"
#include "core/mpi/pmi.h"

using namespace nodempi::mpi;

namespace {

// MPI_Get_library_version's text, as Debian's MPICH 4.0.2 begins it.
std::string mpich(const char* version, const char* device) {
  return std::string("MPICH Version:\t") + version + "\nMPICH Release date:\tThu Apr  7 12:34:45 CDT 2022\n" +
         "MPICH Device:\t" + device + "\nMPICH configure:\t--with-device=" + device + "\n";
}

void versions() {
  CHECK(pmi::finalize_needs_barrier(mpich("4.0.2", "ch4:ucx")));
  CHECK(pmi::finalize_needs_barrier(mpich("4.1.2", "ch4:ucx")));
  CHECK(pmi::finalize_needs_barrier(mpich("3.4.3", "ch4:ucx")));
  CHECK(pmi::finalize_needs_barrier(mpich("4.1", "ch4:ucx")));
  CHECK(!pmi::finalize_needs_barrier(mpich("4.2.0", "ch4:ucx")));
  CHECK(!pmi::finalize_needs_barrier(mpich("4.10.1", "ch4:ucx")));
  CHECK(!pmi::finalize_needs_barrier(mpich("5.0.0", "ch4:ucx")));
  CHECK(!pmi::finalize_needs_barrier(mpich("3.3.2", "ch4:ucx")));
  CHECK(!pmi::finalize_needs_barrier(mpich("4.0.2", "ch4:ofi")));
  CHECK(!pmi::finalize_needs_barrier(mpich("4.0.2", "ch3:nemesis")));
  CHECK(!pmi::finalize_needs_barrier("Open MPI v4.1.4, package: Debian OpenMPI, ident: 4.1.4, repo rev: v4.1.4"));
  CHECK(!pmi::finalize_needs_barrier("Intel(R) MPI Library 2021.10 for Linux* OS"));
  CHECK(!pmi::finalize_needs_barrier("MPICH Version:\tunknown\nMPICH Device:\tch4:ucx\n"));
  CHECK(!pmi::finalize_needs_barrier(""));
}

void set_fd(int fd) { setenv("PMI_FD", std::to_string(fd).c_str(), 1); }

// Without a socket in PMI_FD: false, and nothing written.
void no_socket() {
  unsetenv("PMI_FD");
  CHECK(!pmi::barrier());
  setenv("PMI_FD", "", 1);
  CHECK(!pmi::barrier());
  setenv("PMI_FD", "3x", 1);
  CHECK(!pmi::barrier());
  int p[2];
  CHECK(pipe(p) == 0);
  set_fd(p[1]);
  CHECK(!pmi::barrier());
  close(p[1]);
  char c;
  CHECK(read(p[0], &c, 1) == 0);  // nothing was written
  close(p[0]);
  set_fd(p[1]);  // closed now
  CHECK(!pmi::barrier());
}

// Answered as Hydra does: true after barrier_out; what follows the reply
// stays in the socket for MPICH's client to read.
void answered(const char* reply, bool want) {
  int s[2];
  CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, s) == 0);
  std::string got;
  std::thread server([&] {
    char c;
    while (read(s[1], &c, 1) == 1) {
      got += c;
      if (c == '\n') break;
    }
    CHECK(write(s[1], reply, std::strlen(reply)) == ssize_t(std::strlen(reply)));
    shutdown(s[1], SHUT_WR);
  });
  set_fd(s[0]);
  CHECK(pmi::barrier() == want);
  server.join();
  CHECK(got == "cmd=barrier_in\n");
  const char* rest = std::strchr(reply, '\n');
  if (rest) {
    std::string left(std::strlen(rest + 1), '\0');
    if (!left.empty()) CHECK(read(s[0], left.data(), left.size()) == ssize_t(left.size()));
    CHECK(left == rest + 1);
  }
  close(s[0]);
  close(s[1]);
}

}  // namespace

int main() {
  versions();
  no_socket();
  answered("cmd=barrier_out\n", true);
  answered("cmd=barrier_out rc=0\ncmd=get_result rc=0 value=x\n", true);
  answered("cmd=abort\n", false);
  answered("cmd=barr", false);  // the manager is gone mid-reply
  unsetenv("PMI_FD");
  return nodempi::test::summary("pmi_test");
}
