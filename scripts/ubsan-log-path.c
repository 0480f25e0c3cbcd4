/*
 * Preloaded by scripts/test-asan.sh after libasan and libubsan: makes
 * UndefinedBehaviorSanitizer honour UBSAN_OPTIONS=log_path.
 *
 * With GCC's runtimes, a process that has both (the sanitized addon links
 * both) initialises libubsan as a plug-in of libasan, and that path never
 * applies log_path to libubsan's own copy of the report file: reports go to
 * stderr, where test:asan cannot count them. This sets it through
 * libubsan's __sanitizer_set_report_path (the exported name resolves to
 * libasan's copy, hence dlsym on libubsan itself).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

__attribute__((constructor)) static void ubsan_log_path(void) {
  const char* options = getenv("UBSAN_OPTIONS");
  const char* at = options ? strstr(options, "log_path=") : NULL;
  if (!at) return;
  at += strlen("log_path=");
  char path[4096];
  size_t n = strcspn(at, ":");
  if (n == 0 || n >= sizeof path) return;
  memcpy(path, at, n);
  path[n] = 0;
  void* ubsan = dlopen("libubsan.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (!ubsan) return;
  void (*set_report_path)(const char*) = (void (*)(const char*))dlsym(ubsan, "__sanitizer_set_report_path");
  if (set_report_path) set_report_path(path);
}
