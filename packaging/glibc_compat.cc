// Built into the prebuilt addons only (CMake option NODEMPI_PORTABLE, set by
// scripts/prebuilds.mjs): it lets a binary linked on Debian 12 (glibc 2.36)
// load on glibc 2.28, RHEL/Rocky 8 and the floor of Node 20's own binaries.
//
// Why this way: no compiler for an older glibc comes from the registries the
// project may use (Debian 12 has no older sysroot; on npm, @ziglang/cli
// downloads zig at install time, and the one package holding a zig binary is
// an individual's repack of zig 0.11 under a "Proprietary" licence field), so
// the addon is linked against Debian's glibc and kept from needing anything
// newer than 2.28:
//  - libstdc++ is linked statically (-static-libstdc++, private to the addon
//    through --exclude-libs), so no GLIBCXX/CXXABI version is needed; libgcc_s
//    stays shared, as static libgcc's unwinder needs _dl_find_object (2.35).
//  - The few glibc symbols that the addon or that static libstdc++ reference
//    at a version above 2.28 are defined here, hidden, so every reference in
//    the link binds to these definitions instead of to libc.so.6:
//    * functions that moved into libc in 2.34 (pthread_*, dl*) jump to the
//      same function at its original version, which 2.28 has (in libpthread
//      and libdl, both loaded by Node; the link also names them as needed);
//    * fstat is a real symbol only since 2.33: a direct system call, whose
//      struct is glibc's struct stat on x86-64 and aarch64;
//    * arc4random (2.36; libstdc++'s random_device) reads getrandom (2.25);
//    * __libc_single_threaded (2.32) is 0, "maybe threaded", which only makes
//      libstdc++ use atomic reference counts always.
// test/packaging/prebuilds.test.ts reads each prebuild's version needs, so a
// new symbol above 2.28 fails the test; add it below.
#include <cstddef>
#include <cstdint>
#include <cerrno>
#include <sys/random.h>
#include <sys/syscall.h>
#include <unistd.h>

#if defined(__x86_64__)
#define NODEMPI_GLIBC_BASE "GLIBC_2.2.5"
#define NODEMPI_TAIL_CALL(target) "jmp " target "@PLT"
#elif defined(__aarch64__)
#define NODEMPI_GLIBC_BASE "GLIBC_2.17"
#define NODEMPI_TAIL_CALL(target) "b " target
#else
#error "glibc_compat.cc: only x86-64 and aarch64 prebuilds are made"
#endif

// A hidden `name` that jumps, arguments untouched, to `name` at the first
// version of the architecture's glibc, through the old-version alias
// nodempi_glibc_old_<name>.
#define NODEMPI_PIN(name)                                                          \
  __asm__(".symver nodempi_glibc_old_" #name ", " #name "@" NODEMPI_GLIBC_BASE "\n" \
          ".globl " #name "\n"                                                     \
          ".hidden " #name "\n"                                                    \
          ".type " #name ", %function\n"                                           \
          ".pushsection .text\n"                                                  \
          ".p2align 4\n" #name ":\n"                                               \
          "  " NODEMPI_TAIL_CALL("nodempi_glibc_old_" #name) "\n"                  \
          ".size " #name ", . - " #name "\n"                                        \
          ".popsection\n");

NODEMPI_PIN(pthread_create)
NODEMPI_PIN(pthread_join)
NODEMPI_PIN(pthread_detach)
NODEMPI_PIN(pthread_once)
NODEMPI_PIN(pthread_key_create)
NODEMPI_PIN(__pthread_key_create)
NODEMPI_PIN(pthread_key_delete)
NODEMPI_PIN(pthread_getspecific)
NODEMPI_PIN(pthread_setspecific)
NODEMPI_PIN(pthread_mutex_trylock)
NODEMPI_PIN(dlopen)
NODEMPI_PIN(dlsym)
NODEMPI_PIN(dlclose)
NODEMPI_PIN(dlerror)

struct stat;
struct stat64;

extern "C" {

__attribute__((visibility("hidden"))) int fstat(int fd, struct stat* buf) {
  return static_cast<int>(syscall(SYS_fstat, fd, buf));
}

__attribute__((visibility("hidden"))) int fstat64(int fd, struct stat64* buf) {
  return static_cast<int>(syscall(SYS_fstat, fd, buf));
}

__attribute__((visibility("hidden"))) uint32_t arc4random(void) {
  uint32_t value;
  size_t got = 0;
  while (got < sizeof value) {
    ssize_t n = getrandom(reinterpret_cast<char*>(&value) + got, sizeof value - got, 0);
    if (n > 0) got += static_cast<size_t>(n);
    else if (errno != EINTR) __builtin_trap();  // as glibc's own arc4random: never a weak value
  }
  return value;
}

__attribute__((visibility("hidden"))) char __libc_single_threaded = 0;

}  // extern "C"
