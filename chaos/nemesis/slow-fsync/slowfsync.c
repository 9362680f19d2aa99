/*
 * natslake chaos: an LD_PRELOAD shim that makes fsync, fdatasync and sync_file_range slow.
 *
 * Each call first sleeps, then calls the real function (found with dlsym(RTLD_NEXT)). The delay in milliseconds is
 * read on every call from the file named by NATSLAKE_SLOW_FSYNC_FILE (so a running process can be slowed and
 * healed), else from NATSLAKE_SLOW_FSYNC_MS; missing, empty or non-numeric means no delay.
 *
 * It only affects code that calls these functions through libc (Node/libuv, C programs). Go binaries such as
 * nats-server make the system call directly and are not slowed.
 *
 * Build: gcc -shared -fPIC -O2 -o slowfsync.so slowfsync.c -ldl
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static long delay_ms(void) {
  const char *path = getenv("NATSLAKE_SLOW_FSYNC_FILE");
  const char *text = getenv("NATSLAKE_SLOW_FSYNC_MS");
  char buf[32] = {0};
  if (path != NULL && path[0] != '\0') {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) return 0;
    text = buf;
  }
  if (text == NULL) return 0;
  long ms = strtol(text, NULL, 10);
  return ms > 0 ? ms : 0;
}

static void slow_down(void) {
  int saved = errno;
  long ms = delay_ms();
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  while (ms > 0 && nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
  errno = saved;
}

typedef int (*fsync_fn)(int);
typedef int (*sync_range_fn)(int, off64_t, off64_t, unsigned int);
static fsync_fn real_fsync, real_fdatasync;
static sync_range_fn real_sync_file_range;

/* Resolved once at load time, before any thread of the program can call them. */
__attribute__((constructor)) static void resolve(void) {
  real_fsync = (fsync_fn)dlsym(RTLD_NEXT, "fsync");
  real_fdatasync = (fsync_fn)dlsym(RTLD_NEXT, "fdatasync");
  real_sync_file_range = (sync_range_fn)dlsym(RTLD_NEXT, "sync_file_range");
}

int fsync(int fd) {
  slow_down();
  return real_fsync(fd);
}

int fdatasync(int fd) {
  slow_down();
  return real_fdatasync(fd);
}

int sync_file_range(int fd, off64_t offset, off64_t nbytes, unsigned int flags) {
  slow_down();
  return real_sync_file_range(fd, offset, nbytes, flags);
}
