/** Types of parquet-footer.mjs (plain JavaScript so worker threads need no TypeScript loader). */

/** Thrift compact-protocol type codes. */
export declare const T: Readonly<{
  STOP: 0;
  TRUE: 1;
  FALSE: 2;
  BYTE: 3;
  I16: 4;
  I32: 5;
  I64: 6;
  DOUBLE: 7;
  BINARY: 8;
  LIST: 9;
  SET: 10;
  MAP: 11;
  STRUCT: 12;
}>;

export interface ThriftList {
  elem: number;
  items: ThriftValue[];
}
export interface ThriftMap {
  key: number;
  val: number;
  entries: [ThriftValue, ThriftValue][];
}
/** BOOL → boolean, BYTE/I16/I32/DOUBLE → number, I64 → bigint, BINARY → bytes, LIST/SET, MAP, STRUCT → fields. */
export type ThriftValue = boolean | number | bigint | Uint8Array | ThriftList | ThriftMap | ThriftField[];
export interface ThriftField {
  id: number;
  type: number;
  value: ThriftValue;
}

/**
 * What to change in a footer. Leaves are numbered in the order of the Parquet schema's primitive columns (the
 * depth-first order of the Arrow schema's leaf fields), which is also the order of every row group's column chunks.
 */
export interface FooterPlan {
  /** FIXED_LEN_BYTE_ARRAY(12) leaves holding INT96 timestamps: typed INT96, statistics and column index dropped. */
  int96Leaves?: number[] | undefined;
  /** Leaves whose chunk min/max (and column index) are dropped, null count kept: FLOAT/DOUBLE holding NaN. */
  noMinMaxLeaves?: number[] | undefined;
  /** Replacement for the `ARROW:schema` key's value (base64 of an IPC schema message). */
  arrowSchema?: string | undefined;
}

export function decodeStruct(bytes: Uint8Array, start?: number, end?: number): ThriftField[];
export function encodeStruct(fields: readonly ThriftField[]): Uint8Array;
export function footerRange(bytes: Uint8Array): { start: number; end: number };
export function readFileMetaData(bytes: Uint8Array): ThriftField[];
export function replaceFileMetaData(bytes: Uint8Array, fields: readonly ThriftField[]): Uint8Array;
export function rewriteFooter(bytes: Uint8Array, plan: FooterPlan): Uint8Array;
