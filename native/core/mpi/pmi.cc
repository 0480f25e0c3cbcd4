#include "core/mpi/pmi.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <string>

namespace nodempi::mpi::pmi {

namespace {

// The number after `key` in `text` as major * 100 + minor (4.0.2: 400),
// or -1.
int version_after(std::string_view text, std::string_view key) {
  size_t at = text.find(key);
  if (at == std::string_view::npos) return -1;
  at += key.size();
  while (at < text.size() && (text[at] == ' ' || text[at] == '\t')) at++;
  const char* end = text.data() + text.size();
  int major = 0, minor = 0;
  auto [dot, e1] = std::from_chars(text.data() + at, end, major);
  if (e1 != std::errc() || dot == end || *dot != '.') return -1;
  if (std::from_chars(dot + 1, end, minor).ec != std::errc()) return -1;
  return major * 100 + minor;
}

bool write_all(int fd, const char* p, size_t n) {
  while (n > 0) {
    ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= size_t(w);
  }
  return true;
}

// One line, read a byte at a time: MPICH's client reads the socket through
// its own buffer, so nothing past this reply may be taken from it.
bool read_line(int fd, std::string& line) {
  line.clear();
  for (;;) {
    char c = 0;
    ssize_t r = ::read(fd, &c, 1);
    if (r < 0 && errno == EINTR) continue;
    if (r != 1) return false;
    if (c == '\n') return true;
    line += c;
  }
}

}  // namespace

bool finalize_needs_barrier(std::string_view library_version) {
  // MPICH 4.2 moved that barrier before the closes (pmodels/mpich
  // 08d8105b7b: "Having the process stuck in PMI_barrier may prevent other
  // processes to complete the previous ucp_disconnect_nb"). Versions before
  // 3.4 are left alone: untried. Other libraries never say "MPICH Version:".
  if (library_version.find("ch4:ucx") == std::string_view::npos) return false;
  int v = version_after(library_version, "MPICH Version:");
  return v >= 304 && v < 402;
}

bool barrier() {
  const char* env = std::getenv("PMI_FD");
  if (!env || !*env) return false;
  char* end = nullptr;
  long fd = std::strtol(env, &end, 10);
  struct stat st {};
  if (*end || fd < 0 || fd > 65535 || fstat(int(fd), &st) != 0 || !S_ISSOCK(st.st_mode)) return false;
  static constexpr char kIn[] = "cmd=barrier_in\n";
  std::string reply;
  if (!write_all(int(fd), kIn, sizeof kIn - 1) || !read_line(int(fd), reply)) return false;
  return reply.rfind("cmd=barrier_out", 0) == 0;
}

}  // namespace nodempi::mpi::pmi
