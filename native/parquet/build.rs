fn main() {
    napi_build::setup();
    // The zstd context pool (src/zstd_pool.rs) takes the zstd crate's context creations and frees through the
    // linker's --wrap, which GNU ld, gold and lld have; elsewhere the contexts are created and freed as zstd does.
    println!("cargo:rustc-check-cfg=cfg(zstd_pool)");
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") {
        println!("cargo:rustc-cfg=zstd_pool");
        for symbol in ["ZSTD_createCCtx", "ZSTD_freeCCtx", "ZSTD_createDCtx", "ZSTD_freeDCtx"] {
            println!("cargo:rustc-link-arg=-Wl,--wrap={symbol}");
        }
    }
}
