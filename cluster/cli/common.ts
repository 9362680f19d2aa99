/**
 * What every CLI command shares: resolving the warehouse (flag > NATSLAKE_WAREHOUSE), turning errors into a clear
 * message and a non-zero exit code, and small output helpers.
 */
import { InvalidArgumentError } from "commander";
import { ErrorKind, isLakeError } from "../../src/errors.ts";
import { Catalog } from "../../src/table/catalog.ts";
import { toJsonText } from "../../src/spec/values.ts";

export interface WarehouseOpts {
  warehouse?: string;
}

export function catalogFrom(opts: WarehouseOpts): Catalog {
  const wh = opts.warehouse ?? process.env["NATSLAKE_WAREHOUSE"];
  if (!wh) throw new UsageError("no warehouse: pass --warehouse DIR or set NATSLAKE_WAREHOUSE");
  return new Catalog(wh);
}

/** A wrong command line: printed without a stack, exit code 2. */
export class UsageError extends Error {
  override readonly name = "UsageError";
}

/** Exit codes: 2 for bad input (arguments, data, names), 3 for a conflict, 1 for everything else. */
export function exitCodeOf(e: unknown): number {
  if (e instanceof UsageError || e instanceof InvalidArgumentError) return 2;
  if (isLakeError(e)) {
    if (e.kind === ErrorKind.DataInvalid || e.kind === ErrorKind.NotFound || e.kind === ErrorKind.AlreadyExists || e.kind === ErrorKind.Unsupported) return 2;
    if (e.kind === ErrorKind.Conflict) return 3;
  }
  return 1;
}

export function parsePositiveInt(what: string) {
  return (v: string): number => {
    if (!/^\d+$/.test(v) || Number(v) <= 0) throw new InvalidArgumentError(`${what} must be a positive integer, got '${v}'`);
    return Number(v);
  };
}

export function parseNonNegativeInt(what: string) {
  return (v: string): number => {
    if (!/^\d+$/.test(v)) throw new InvalidArgumentError(`${what} must be a non-negative integer, got '${v}'`);
    return Number(v);
  };
}

/** `--at` accepts ISO-8601 text or epoch milliseconds. */
export function parseTime(v: string): number {
  if (/^\d+$/.test(v)) return Number(v);
  const ms = Date.parse(v);
  if (Number.isNaN(ms)) throw new InvalidArgumentError(`'${v}' is not a time (use ISO-8601 such as 2026-01-31T12:00:00Z, or epoch milliseconds)`);
  return ms;
}

/** `--option key=value`, repeatable. */
export function collectKeyValue(v: string, acc: Record<string, string>): Record<string, string> {
  const i = v.indexOf("=");
  if (i <= 0) throw new InvalidArgumentError(`option '${v}' must have the form key=value`);
  acc[v.slice(0, i).trim()] = v.slice(i + 1).trim();
  return acc;
}

/** Renders rows as an aligned text table. */
export function renderTable(columns: string[], rows: unknown[][]): string {
  const cell = (v: unknown): string => (v === null || v === undefined ? "NULL" : typeof v === "object" ? toJsonText(v) : Object.is(v, -0) ? "-0.0" : String(v));
  const cells = rows.map((r) => r.map(cell));
  const widths = columns.map((c, i) => Math.min(60, Math.max(c.length, ...cells.map((r) => r[i]!.length))));
  const fit = (s: string, w: number): string => (s.length > w ? s.slice(0, w - 1) + "…" : s.padEnd(w));
  const line = (vals: string[]): string => vals.map((v, i) => fit(v, widths[i]!)).join(" | ").trimEnd();
  return [line(columns), widths.map((w) => "-".repeat(w)).join("-+-"), ...cells.map(line)].join("\n");
}
