//! natslake's native Parquet codec: the two calls of src/codec/parquet-wasm-ops.mjs (Arrow IPC stream → Parquet,
//! Parquet → Arrow IPC stream) done by arrow-rs compiled for the host instead of for WebAssembly.
//!
//! The arrow-rs release and the writer settings are the ones parquet-wasm 0.8.0 uses, so both paths write the same
//! bytes for the same spec (test/unit/codec/parquet-native-parity.test.ts checks it). Everything natslake adds on
//! top (footer rewrite, INT96 stand-ins, statistics rules) stays in JavaScript and is shared by both paths.
//!
//! Both calls are synchronous: they run on the calling thread (the main thread or a Parquet worker thread) exactly
//! as the WebAssembly calls do, and napi-rs registers the module per context so every worker thread can load it.

mod merge;
mod row_batch;
#[cfg(zstd_pool)]
mod zstd_pool;

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr::NonNull;
use std::sync::Arc;

use arrow_array::{RecordBatch, RecordBatchReader};
use arrow_buffer::Buffer as ArrowBuffer;
use arrow_ipc::reader::StreamDecoder;
use arrow_ipc::writer::{StreamEncoder, StreamWriter};
use arrow_schema::{DataType, Field, FieldRef, Fields, Schema, SchemaRef};
use bytes::Bytes;
use napi::bindgen_prelude::{Buffer, BufferSlice, FromNapiValue, Uint8ArraySlice};
use napi::{Env, Error, Result, Status};
use napi_derive::napi;
use parquet::arrow::arrow_reader::{ArrowReaderMetadata, ArrowReaderOptions, ParquetRecordBatchReader, ParquetRecordBatchReaderBuilder};
use parquet::arrow::{ArrowWriter, ProjectionMask};
use parquet::basic::{Compression, Encoding};
use parquet::file::properties::{EnabledStatistics, WriterProperties, WriterVersion};
use parquet::schema::types::ColumnPath;

/// The resolved writer settings of `ParquetWriterSpec` (src/codec/parquet-ops.d.mts). The enum fields carry
/// parquet-wasm 0.8's numbering, so one spec drives either path. `footer` is applied in JavaScript and not read here.
#[napi(object)]
pub struct WriterSpec {
    pub compression: u32,
    pub max_row_group_size: f64,
    pub statistics: u32,
    pub dictionary: bool,
    pub dictionary_columns: Vec<String>,
    pub writer_version: u32,
    pub created_by: Option<String>,
    pub plain_columns: Vec<String>,
    pub plain_everywhere: bool,
}

/// `ParquetDecodeSpec`: top-level columns (unknown names skipped), row groups, rows per record batch.
#[napi(object)]
pub struct DecodeSpec {
    pub columns: Option<Vec<String>>,
    pub row_groups: Option<Vec<u32>>,
    pub batch_size: Option<u32>,
}

fn invalid(message: String) -> Error {
    Error::new(Status::InvalidArg, message)
}

fn failed(context: &str, e: impl std::fmt::Display) -> Error {
    Error::new(Status::GenericFailure, format!("{context}: {e}"))
}

/// Runs `f`, turning a panic inside arrow-rs (possible on malformed input) into a JavaScript error instead of an
/// aborted process.
fn guarded<T>(what: &str, f: impl FnOnce() -> Result<T>) -> Result<T> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(result) => result,
        Err(panic) => {
            let detail = panic
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| panic.downcast_ref::<&str>().copied())
                .unwrap_or("unknown panic");
            Err(failed(what, format!("arrow-rs panicked: {detail}")))
        }
    }
}

fn compression(code: u32) -> Result<Compression> {
    Ok(match code {
        0 => Compression::UNCOMPRESSED,
        1 => Compression::SNAPPY,
        2 => Compression::GZIP(Default::default()),
        3 => Compression::BROTLI(Default::default()),
        4 => Compression::LZ4,
        5 => Compression::ZSTD(Default::default()),
        6 => Compression::LZ4_RAW,
        other => return Err(invalid(format!("unsupported Parquet compression code {other}"))),
    })
}

fn statistics(code: u32) -> Result<EnabledStatistics> {
    Ok(match code {
        0 => EnabledStatistics::None,
        1 => EnabledStatistics::Chunk,
        2 => EnabledStatistics::Page,
        other => return Err(invalid(format!("unknown Parquet statistics level {other}"))),
    })
}

fn writer_version(code: u32) -> Result<WriterVersion> {
    Ok(match code {
        0 => WriterVersion::PARQUET_1_0,
        1 => WriterVersion::PARQUET_2_0,
        other => return Err(invalid(format!("unknown Parquet writer version {other}"))),
    })
}

/// The writer properties parquet-wasm-ops.mjs builds, setting for setting and in the same order.
fn writer_properties(spec: &WriterSpec) -> Result<WriterProperties> {
    let max_row_group_size = if spec.max_row_group_size.is_finite() { spec.max_row_group_size.max(1.0) as usize } else { usize::MAX };
    let mut b = WriterProperties::builder()
        .set_compression(compression(spec.compression)?)
        .set_max_row_group_row_count(Some(max_row_group_size))
        .set_statistics_enabled(statistics(spec.statistics)?)
        .set_dictionary_enabled(spec.dictionary)
        .set_writer_version(writer_version(spec.writer_version)?);
    for column in &spec.dictionary_columns {
        b = b.set_column_dictionary_enabled(ColumnPath::from(column.as_str()), true);
    }
    // INT96 stand-ins must be PLAIN without dictionary or statistics (parquet-footer.mjs rewrites their type). A
    // column is named by one path part, as parquet-wasm names it, so the paths match between the two codecs.
    for column in &spec.plain_columns {
        let path = || ColumnPath::from(column.as_str());
        b = b
            .set_column_dictionary_enabled(path(), false)
            .set_column_encoding(path(), Encoding::PLAIN)
            .set_column_statistics_enabled(path(), EnabledStatistics::None);
    }
    if spec.plain_everywhere {
        b = b.set_encoding(Encoding::PLAIN);
    }
    if let Some(created_by) = &spec.created_by {
        b = b.set_created_by(created_by.clone());
    }
    Ok(b.build())
}

/// Encodes an Arrow IPC stream as one Parquet file (without natslake's footer rewrite, done by the caller). The file
/// is copied into memory V8 owns (a few MB at most, as it is compressed): such a buffer can be transferred to another
/// thread, which Node refuses for memory an addon owns, and Parquet bytes are often posted between threads.
#[napi]
pub fn encode_ipc_stream<'env>(env: &'env Env, ipc: Uint8ArraySlice, spec: WriterSpec) -> Result<BufferSlice<'env>> {
    let file = guarded("Parquet encode", || {
        let props = writer_properties(&spec)?;
        // SAFETY: `ipc` stays alive and unchanged for this whole synchronous call (the caller's thread is in it, and a
        // worker's input buffer is reused only for its next job), and every array decoded from it is dropped with the
        // decoder and the writer before the call returns: only the Parquet bytes, a separate Vec, outlive it.
        let mut input = unsafe { borrowed(&ipc) };
        let mut decoder = StreamDecoder::new();
        let mut writer: Option<ArrowWriter<Vec<u8>>> = None;
        let mut props = Some(props);
        loop {
            let batch = decoder.decode(&mut input).map_err(|e| failed("reading the Arrow IPC stream", e))?;
            if writer.is_none() {
                if let Some(schema) = decoder.schema() {
                    let out = Vec::with_capacity(ipc.len() / 4);
                    writer = Some(ArrowWriter::try_new(out, schema, props.take()).map_err(|e| failed("Parquet encode", e))?);
                }
            }
            match (batch, writer.as_mut()) {
                (Some(batch), Some(w)) => w.write(&batch).map_err(|e| failed("Parquet encode", e))?,
                _ if input.is_empty() => break,
                _ => {}
            }
        }
        decoder.finish().map_err(|e| failed("reading the Arrow IPC stream", e))?;
        let writer = writer.ok_or_else(|| invalid("the Arrow IPC stream has no schema".to_string()))?;
        // Flushes the last row group and writes the footer, as `close` does, and hands the bytes back.
        writer.into_inner().map_err(|e| failed("Parquet encode", e))
    })?;
    BufferSlice::copy_from(env, file)
}

/// `bytes` as an Arrow buffer without a copy: the IPC decoder then takes the column data in place (where it is
/// aligned for its type, which apache-arrow's writer pads to) instead of copying the whole stream first.
///
/// # Safety
/// The returned buffer, and every buffer sliced from it, must be dropped before `bytes` is freed or changed.
unsafe fn borrowed(bytes: &[u8]) -> ArrowBuffer {
    match NonNull::new(bytes.as_ptr().cast_mut()) {
        Some(ptr) => unsafe { ArrowBuffer::from_custom_allocation(ptr, bytes.len(), Arc::new(())) },
        None => ArrowBuffer::from_vec(Vec::<u8>::new()),
    }
}

/// Decodes a Parquet file into an Arrow IPC stream, handed to JavaScript without a copy: the named top-level columns
/// the file has (all when `columns` is absent) of the chosen row groups (all when absent), in record batches of
/// `batchSize` rows (default 65536).
#[napi]
pub fn decode_to_ipc_stream(bytes: Uint8ArraySlice, opts: Option<DecodeSpec>) -> Result<Buffer> {
    guarded("Parquet decode", || {
        let reader = decode_reader(&bytes, opts)?;
        let schema = reader.schema();
        let mut out = Vec::new();
        let mut writer = StreamWriter::try_new(&mut out, &schema).map_err(|e| failed("writing the Arrow IPC stream", e))?;
        for batch in reader {
            let batch: RecordBatch = batch.map_err(|e| failed("Parquet decode", e))?;
            writer.write(&batch).map_err(|e| failed("writing the Arrow IPC stream", e))?;
        }
        writer.finish().map_err(|e| failed("writing the Arrow IPC stream", e))?;
        drop(writer);
        Ok(out.into())
    })
}

/// `decode_to_ipc_stream`'s stream (the same bytes) in memory V8 owns, for a worker thread that posts it: Node refuses
/// to transfer the addon's memory, so the stream would be copied once more in JavaScript. Here the decoded columns
/// are referenced by the IPC encoder in place and copied once, straight into a Node Buffer of the stream's size.
#[napi]
pub fn decode_to_transferable_ipc_stream<'env>(env: &'env Env, bytes: Uint8ArraySlice, opts: Option<DecodeSpec>) -> Result<BufferSlice<'env>> {
    let parts = guarded("Parquet decode", || {
        let reader = decode_reader(&bytes, opts)?;
        let schema = reader.schema();
        let mut encoder = StreamEncoder::try_new(&schema).map_err(|e| failed("writing the Arrow IPC stream", e))?;
        let mut parts: Vec<ArrowBuffer> = Vec::new();
        for batch in reader {
            let batch: RecordBatch = batch.map_err(|e| failed("Parquet decode", e))?;
            parts.extend(encoder.encode(&batch).map_err(|e| failed("writing the Arrow IPC stream", e))?);
        }
        parts.extend(encoder.finish().map_err(|e| failed("writing the Arrow IPC stream", e))?);
        Ok(parts)
    })?;
    let total: usize = parts.iter().map(|p| p.len()).sum();
    let mut data: *mut std::ffi::c_void = std::ptr::null_mut();
    let mut value: napi::sys::napi_value = std::ptr::null_mut();
    // SAFETY: napi_create_buffer returns `total` writable bytes at `data` (uninitialized: every byte is written below).
    let status = unsafe { napi::sys::napi_create_buffer(env.raw(), total, &mut data, &mut value) };
    if status != napi::sys::Status::napi_ok {
        return Err(failed("allocating the decoded Arrow IPC stream", format!("napi_create_buffer of {total} bytes failed (status {status})")));
    }
    let mut at = 0usize;
    for p in &parts {
        // SAFETY: the parts total `total` bytes, so each copy stays within the buffer; they never overlap it.
        unsafe { std::ptr::copy_nonoverlapping(p.as_ptr(), (data as *mut u8).add(at), p.len()) };
        at += p.len();
    }
    drop(parts);
    // SAFETY: `value` is the Buffer just created in this call's scope.
    unsafe { BufferSlice::from_napi_value(env.raw(), value) }
}

/// The record batch reader of a decode (see `decode_to_ipc_stream`).
fn decode_reader(bytes: &[u8], opts: Option<DecodeSpec>) -> Result<ParquetRecordBatchReader> {
    let opts = opts.unwrap_or(DecodeSpec { columns: None, row_groups: None, batch_size: None });
    // One copy of the (compressed) file: the reader wants owned bytes, and the JavaScript buffer is only borrowed.
    let data = Bytes::copy_from_slice(&bytes);
    let metadata = ArrowReaderMetadata::load(&data, ArrowReaderOptions::default()).map_err(|e| failed("reading the Parquet footer", e))?;
    let metadata = without_view_types(metadata)?;
    let row_group_count = metadata.metadata().num_row_groups();
    let mut builder = ParquetRecordBatchReaderBuilder::new_with_metadata(data, metadata).with_batch_size(opts.batch_size.unwrap_or(65536).max(1) as usize);
    if let Some(row_groups) = opts.row_groups {
        let row_groups: Vec<usize> = row_groups.into_iter().map(|i| i as usize).collect();
        if let Some(bad) = row_groups.iter().find(|&&i| i >= row_group_count) {
            return Err(invalid(format!("row group {bad} does not exist (the file has {row_group_count})")));
        }
        builder = builder.with_row_groups(row_groups);
    }
    if let Some(columns) = &opts.columns {
        let roots: Vec<usize> =
            builder.schema().fields().iter().enumerate().filter(|(_, f)| columns.iter().any(|c| c == f.name())).map(|(i, _)| i).collect();
        let mask = ProjectionMask::roots(builder.parquet_schema(), roots);
        builder = builder.with_projection(mask);
    }
    builder.build().map_err(|e| failed("Parquet decode", e))
}

/// The file's Arrow schema (the one `decode_to_ipc_stream` yields) as an IPC stream without batches.
#[napi]
pub fn schema_to_ipc_stream(bytes: Uint8ArraySlice) -> Result<Buffer> {
    guarded("reading the Parquet schema", || {
        let data = Bytes::copy_from_slice(&bytes);
        let metadata = ArrowReaderMetadata::load(&data, ArrowReaderOptions::default()).map_err(|e| failed("reading the Parquet footer", e))?;
        let metadata = without_view_types(metadata)?;
        let mut out = Vec::new();
        let mut writer = StreamWriter::try_new(&mut out, metadata.schema()).map_err(|e| failed("writing the Arrow IPC stream", e))?;
        writer.finish().map_err(|e| failed("writing the Arrow IPC stream", e))?;
        drop(writer);
        Ok(out.into())
    })
}

/// Reads string and binary view columns as plain strings and binaries, as parquet-wasm does (Arrow JS has no view
/// types): only files whose embedded Arrow schema asks for views are affected.
fn without_view_types(metadata: ArrowReaderMetadata) -> Result<ArrowReaderMetadata> {
    let schema = metadata.schema();
    if !schema.fields().iter().any(|f| has_view(f.data_type())) {
        return Ok(metadata);
    }
    let fields: Fields = schema.fields().iter().map(without_view).collect();
    let plain: SchemaRef = Arc::new(Schema::new_with_metadata(fields, schema.metadata().clone()));
    ArrowReaderMetadata::try_new(metadata.metadata().clone(), ArrowReaderOptions::default().with_schema(plain)).map_err(|e| failed("reading the Parquet footer", e))
}

fn has_view(t: &DataType) -> bool {
    match t {
        DataType::Utf8View | DataType::BinaryView => true,
        DataType::Struct(fields) => fields.iter().any(|f| has_view(f.data_type())),
        DataType::List(f) | DataType::LargeList(f) | DataType::FixedSizeList(f, _) | DataType::Map(f, _) => has_view(f.data_type()),
        _ => false,
    }
}

fn without_view(field: &FieldRef) -> FieldRef {
    let t = match field.data_type() {
        DataType::Utf8View => DataType::Utf8,
        DataType::BinaryView => DataType::Binary,
        DataType::Struct(fields) => DataType::Struct(fields.iter().map(without_view).collect()),
        DataType::List(f) => DataType::List(without_view(f)),
        DataType::LargeList(f) => DataType::LargeList(without_view(f)),
        DataType::FixedSizeList(f, n) => DataType::FixedSizeList(without_view(f), *n),
        DataType::Map(f, sorted) => DataType::Map(without_view(f), *sorted),
        other => other.clone(),
    };
    Arc::new(Field::clone(field).with_data_type(t))
}

/// The zstd context pool's counters (src/zstd_pool.rs): contexts zstd created, creations the pool answered with an
/// idle context, idle contexts now and their bytes. None where the pool is not built in (not Linux).
#[napi(object)]
pub struct ZstdPoolStats {
    pub created: f64,
    pub reused: f64,
    pub idle: u32,
    pub idle_bytes: f64,
}

#[napi]
pub fn zstd_context_pool() -> Option<ZstdPoolStats> {
    #[cfg(zstd_pool)]
    {
        let s = zstd_pool::stats();
        Some(ZstdPoolStats { created: s.created as f64, reused: s.reused as f64, idle: s.idle as u32, idle_bytes: s.idle_bytes as f64 })
    }
    #[cfg(not(zstd_pool))]
    {
        None
    }
}
