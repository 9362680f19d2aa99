//! A process-wide pool of zstd compression and decompression contexts.
//!
//! arrow-rs makes a zstd codec per column chunk it writes or reads (one per column per row group), and each codec
//! creates a fresh compression context *and* a fresh decompression context. Creating a context runs the `cpuid`
//! instruction three times (zstd checks for BMI2 at every creation), and under a hypervisor `cpuid` traps: about
//! 10 µs each on the machines natslake is measured on, so ~65 µs of CPU per column chunk before a byte is
//! compressed. For the small files and small row groups of a cluster (a 250 ms flush of a bucket, a compaction's
//! tail of row groups, a level-0 run) that fixed cost was most of the encode and decode time.
//!
//! build.rs links this crate with `--wrap` for the four create/free functions, so the zstd crate's calls land here:
//! a freed context is reset to its defaults (`ZSTD_reset_session_and_parameters`: no history, no dictionary, default
//! parameters — what a new context is, keeping only its allocated workspace) and kept for the next creation, up to
//! `POOL_LIMIT` contexts and `POOL_BYTES` of each kind, so what a process keeps idle is bounded in bytes.
//! Compressed bytes do not depend on a context's past once it is reset, so the files are byte for byte the same
//! (test/unit/codec/parquet-native-parity.test.ts compares them with parquet-wasm's).

use std::ffi::c_void;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// Idle contexts kept per kind: enough for every column of a wide row group being written while another is read.
const POOL_LIMIT: usize = 32;

/// Bytes of idle contexts kept per kind (`ZSTD_sizeof_*`): a compression context that worked on 1 MB pages holds
/// about half a megabyte of workspace, and a node's RSS budget is counted in tens of megabytes.
const POOL_BYTES: usize = 8 << 20;

/// `ZSTD_ResetDirective::ZSTD_reset_session_and_parameters` (zstd.h).
const RESET_SESSION_AND_PARAMETERS: i32 = 3;

extern "C" {
    fn __real_ZSTD_createCCtx() -> *mut c_void;
    fn __real_ZSTD_freeCCtx(cctx: *mut c_void) -> usize;
    fn __real_ZSTD_createDCtx() -> *mut c_void;
    fn __real_ZSTD_freeDCtx(dctx: *mut c_void) -> usize;
    fn ZSTD_CCtx_reset(cctx: *mut c_void, reset: i32) -> usize;
    fn ZSTD_DCtx_reset(dctx: *mut c_void, reset: i32) -> usize;
    fn ZSTD_isError(code: usize) -> u32;
    fn ZSTD_sizeof_CCtx(cctx: *const c_void) -> usize;
    fn ZSTD_sizeof_DCtx(dctx: *const c_void) -> usize;
}

/// Idle contexts as addresses with their sizes (a raw pointer is not `Send`; each is owned by the pool alone until
/// handed out), and the sum of the sizes.
struct Idle {
    contexts: Vec<(usize, usize)>,
    bytes: usize,
}

struct Pool(Mutex<Idle>);

impl Pool {
    const fn new() -> Self {
        Pool(Mutex::new(Idle { contexts: Vec::new(), bytes: 0 }))
    }

    fn take(&self) -> Option<*mut c_void> {
        let mut idle = self.0.lock().ok()?;
        let (address, size) = idle.contexts.pop()?;
        idle.bytes -= size;
        Some(address as *mut c_void)
    }

    /// Keeps `context` (of `size` bytes) if there is room; false: the caller frees it.
    fn keep(&self, context: *mut c_void, size: usize) -> bool {
        match self.0.lock() {
            Ok(mut idle) if idle.contexts.len() < POOL_LIMIT && idle.bytes + size <= POOL_BYTES => {
                idle.contexts.push((context as usize, size));
                idle.bytes += size;
                true
            }
            _ => false,
        }
    }

    fn idle(&self) -> (usize, usize) {
        self.0.lock().map(|idle| (idle.contexts.len(), idle.bytes)).unwrap_or((0, 0))
    }
}

static COMPRESSION: Pool = Pool::new();
static DECOMPRESSION: Pool = Pool::new();
/// Contexts zstd created (either kind), and creations the pool answered instead: what `stats` reports.
static CREATED: AtomicU64 = AtomicU64::new(0);
static REUSED: AtomicU64 = AtomicU64::new(0);

/// The pool's counters since the process started (for tests and diagnosis).
pub struct PoolStats {
    pub created: u64,
    pub reused: u64,
    pub idle: usize,
    pub idle_bytes: usize,
}

pub fn stats() -> PoolStats {
    let (compression, compression_bytes) = COMPRESSION.idle();
    let (decompression, decompression_bytes) = DECOMPRESSION.idle();
    PoolStats {
        created: CREATED.load(Ordering::Relaxed),
        reused: REUSED.load(Ordering::Relaxed),
        idle: compression + decompression,
        idle_bytes: compression_bytes + decompression_bytes,
    }
}

/// A pooled context when there is one, else a new one from zstd; counted either way.
unsafe fn take_or_create(pool: &Pool, create: unsafe extern "C" fn() -> *mut c_void) -> *mut c_void {
    match pool.take() {
        Some(context) => {
            REUSED.fetch_add(1, Ordering::Relaxed);
            context
        }
        None => {
            CREATED.fetch_add(1, Ordering::Relaxed);
            create()
        }
    }
}

/// Resets `context` to a new context's state and keeps it, or frees it when the reset fails or the pool is full.
unsafe fn reset_and_keep(
    pool: &Pool,
    context: *mut c_void,
    reset: unsafe extern "C" fn(*mut c_void, i32) -> usize,
    size_of: unsafe extern "C" fn(*const c_void) -> usize,
    free: unsafe extern "C" fn(*mut c_void) -> usize,
) -> usize {
    if context.is_null() {
        return 0;
    }
    if ZSTD_isError(reset(context, RESET_SESSION_AND_PARAMETERS)) == 0 && pool.keep(context, size_of(context)) {
        return 0;
    }
    free(context)
}

#[no_mangle]
pub unsafe extern "C" fn __wrap_ZSTD_createCCtx() -> *mut c_void {
    take_or_create(&COMPRESSION, __real_ZSTD_createCCtx)
}

#[no_mangle]
pub unsafe extern "C" fn __wrap_ZSTD_freeCCtx(cctx: *mut c_void) -> usize {
    reset_and_keep(&COMPRESSION, cctx, ZSTD_CCtx_reset, ZSTD_sizeof_CCtx, __real_ZSTD_freeCCtx)
}

#[no_mangle]
pub unsafe extern "C" fn __wrap_ZSTD_createDCtx() -> *mut c_void {
    take_or_create(&DECOMPRESSION, __real_ZSTD_createDCtx)
}

#[no_mangle]
pub unsafe extern "C" fn __wrap_ZSTD_freeDCtx(dctx: *mut c_void) -> usize {
    reset_and_keep(&DECOMPRESSION, dctx, ZSTD_DCtx_reset, ZSTD_sizeof_DCtx, __real_ZSTD_freeDCtx)
}
