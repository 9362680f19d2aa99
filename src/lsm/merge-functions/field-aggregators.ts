/**
 * The aggregation engine's field aggregators (Paimon 1.4.2's FieldAggregator and its subclasses): each folds one
 * column's values of a key's versions into its accumulator (`agg`), and takes a retraction back (`retract`) where
 * Paimon can — sum, product, last_value, last_non_null_value, collect, merge_map (and the primary-key columns, which
 * only carry their value); the others refuse it unless `fields.<f>.ignore-retract`. Java keeps a distinct collect's
 * elements and a merged map's keys in a HashSet / HashMap, so their order is its hash order; natslake keeps them in
 * the order they came (the same elements and entries, in another order). Values are natslake's canonical ones
 * (src/format/values.ts); integer arithmetic wraps as Java's does, DECIMAL follows Java's Decimal (HALF_UP to the
 * column's scale, null when the result needs more digits than its precision — except compact decimals, precision
 * ≤ 18, whose sums Java keeps as they are while they fit in a long).
 *
 * `fieldAggregator` also checks the function against the column's type, in Java's words, so a table whose
 * aggregation could not run is refused when it is created.
 */
import { dataInvalid, ErrorKind, LakeError } from "../../errors.ts";
import { isNestedType, MAX_LENGTH, typeToSql, type DataType } from "../../format/data-types.ts";
import type { Value } from "../../format/values.ts";
import { compareValues } from "../../codec/stats.ts";
import { toJsonText, toJsonValue } from "../../format/values.ts";

export interface FieldAggregator {
  agg(accumulator: Value, input: Value): Value;
  /** An input older than the accumulator (partial-update's sequence groups); absent: Java's default, agg(input, accumulator). */
  aggReversed?(accumulator: Value, input: Value): Value;
  retract(accumulator: Value, input: Value): Value;
  /** A new key begins (first_value and first_non_null_value forget they have one). */
  reset(): void;
  /**
   * An aggregator whose result is one of its inputs as it is, which a merge can take as a cell (merge-function.ts
   * `BuiltRow.cells`) without reading values: "last", the last input (last_value, a primary-key column); "lastNonNull",
   * the last non-null input (last_non_null_value). Only for additions: a retraction goes through `retract`.
   */
  readonly pick?: "last" | "lastNonNull";
  /**
   * `agg` always gives back its accumulator or its input as it is (max, min): a merge can then take the cell of the
   * input that won instead of a computed value.
   */
  readonly choosesInput?: boolean;
}

/** An older input folded into the accumulator (Java's FieldAggregator.aggReversed). */
export function aggReversed(a: FieldAggregator, accumulator: Value, input: Value): Value {
  return a.aggReversed !== undefined ? a.aggReversed(accumulator, input) : a.agg(input, accumulator);
}

/** Paimon's names of the aggregate functions natslake runs. */
export const AGGREGATE_FUNCTIONS = [
  "sum",
  "product",
  "max",
  "min",
  "last_value",
  "last_non_null_value",
  "first_value",
  "first_non_null_value",
  "first_not_null_value",
  "bool_and",
  "bool_or",
  "listagg",
  "collect",
  "merge_map",
] as const;

/** Paimon's functions natslake does not run (yet): refused by name rather than called unknown. */
const NOT_RUN = ["merge_map_with_keytime", "nested_update", "nested_partial_update", "rbm32", "rbm64", "hll_sketch", "theta_sketch"];

export interface FieldAggregatorOptions {
  /** `fields.<f>.ignore-retract`. */
  ignoreRetract: boolean;
  /** `fields.<f>.list-agg-delimiter` (default ","). */
  delimiter: string;
  /** `fields.<f>.distinct`. */
  distinct: boolean;
}

const NUMERIC = new Set(["TINYINT", "SMALLINT", "INT", "BIGINT", "FLOAT", "DOUBLE", "DECIMAL"]);

/** The aggregator `name` for a column `field` of `type`; DataInvalid (Java's words) for a function or type it refuses. */
export function fieldAggregator(name: string, field: string, type: DataType, o: FieldAggregatorOptions): FieldAggregator {
  const agg = baseAggregator(name, field, type, o);
  if (!o.ignoreRetract) return agg;
  return { agg: (a, i) => agg.agg(a, i), retract: (a) => a, reset: () => agg.reset() };
}

/** The primary-key columns' "aggregator": the value itself (equal in every version of a key). */
export const PRIMARY_KEY_AGGREGATOR: FieldAggregator = { agg: (_, i) => i, retract: (_, i) => i, reset: () => undefined, pick: "last" };

function noRetract(name: string): (a: Value, i: Value) => Value {
  return () => {
    throw dataInvalid(`Aggregate function '${name}' does not support retraction, If you allow this function to ignore retraction messages, you can configure 'fields.\${field_name}.ignore-retract'='true'.`, { reason: "retraction-refused" });
  };
}

const typeText = typeToSql;

function baseAggregator(name: string, field: string, type: DataType, o: FieldAggregatorOptions): FieldAggregator {
  const nothing = (): void => undefined;
  const keepNonNull = (combine: (a: Value, i: Value) => Value) => (a: Value, i: Value): Value => (a === null || i === null ? (a === null ? i : a) : combine(a, i));
  switch (name) {
    case "sum":
    case "product": {
      if (!NUMERIC.has(type.root)) throw dataInvalid(`Data type for ${name} column must be 'NumericType' but was '${typeText(type)}'.`, { option: `fields.${field}.aggregate-function` });
      const ar = arithmetic(type);
      if (name === "sum") return { agg: keepNonNull(ar.add), retract: (a, i) => (a === null || i === null ? (a === null ? (i === null ? null : ar.negate(i)) : a) : ar.subtract(a, i)), reset: nothing };
      return { agg: keepNonNull(ar.multiply), retract: (a, i) => (a === null || i === null ? a : ar.divide(a, i)), reset: nothing };
    }
    case "max":
    case "min": {
      if (isNestedType(type)) throw dataInvalid(`Data type for ${name} column must be comparable but was '${typeText(type)}'.`, { option: `fields.${field}.aggregate-function` });
      const sign = name === "max" ? 1 : -1;
      return { agg: keepNonNull((a, i) => (sign * compareValues(type, a, i) < 0 ? i : a)), retract: noRetract(name), reset: nothing, choosesInput: true };
    }
    case "last_value":
      return { agg: (_, i) => i, retract: () => null, reset: nothing, pick: "last" };
    case "last_non_null_value":
      return { agg: (a, i) => (i === null ? a : i), retract: (a, i) => (i !== null ? null : a), reset: nothing, pick: "lastNonNull" };
    case "first_value":
    case "first_non_null_value":
    case "first_not_null_value": {
      const skipNull = name !== "first_value";
      let initialized = false;
      return {
        agg: (a, i) => {
          if (initialized || (skipNull && i === null)) return a;
          initialized = true;
          return i;
        },
        retract: noRetract(name),
        reset: () => {
          initialized = false;
        },
      };
    }
    case "bool_and":
    case "bool_or":
      if (type.root !== "BOOLEAN") throw dataInvalid(`Data type for ${name === "bool_and" ? "bool and" : "bool or"} column must be 'BooleanType' but was '${typeText(type)}'.`, { option: `fields.${field}.aggregate-function` });
      return { agg: keepNonNull((a, i) => (name === "bool_and" ? (a as boolean) && (i as boolean) : (a as boolean) || (i as boolean))), retract: noRetract(name), reset: nothing };
    case "listagg":
      if (type.root !== "VARCHAR") throw dataInvalid(`Data type for list agg column must be 'VarCharType' but was '${typeText(type)}'.`, { option: `fields.${field}.aggregate-function` });
      if (type.length !== MAX_LENGTH) throw dataInvalid(`Data type for list agg column must be STRING (unbounded VARCHAR), but was VARCHAR(${type.length}).`, { option: `fields.${field}.aggregate-function` });
      return { agg: keepNonNull((a, i) => listagg(a as string, i as string, o)), retract: noRetract(name), reset: nothing };
    case "collect":
      if (type.root !== "ARRAY") throw dataInvalid(`Data type for collect column must be 'Array' but was '${typeText(type)}'.`, { option: `fields.${field}.aggregate-function` });
      return collect(type.element, o.distinct);
    case "merge_map":
      if (type.root !== "MAP") throw dataInvalid(`Data type for merge map column must be 'MAP' but was '${typeText(type)}'`, { option: `fields.${field}.aggregate-function` });
      return mergeMap(type.key);
    default:
      if (NOT_RUN.includes(name)) throw new LakeError(ErrorKind.Unsupported, `aggregate function '${name}' (fields.${field}.aggregate-function) is not run by natslake yet (it runs ${AGGREGATE_FUNCTIONS.join(", ")})`, { context: { option: `fields.${field}.aggregate-function` } });
      throw dataInvalid(`Use unsupported aggregation: ${name} or spell aggregate function incorrectly!`, { option: `fields.${field}.aggregate-function` });
  }
}

/** Java's listagg: empty strings add nothing; `distinct` adds only tokens the accumulator lacks. */
function listagg(acc: string, input: string, o: FieldAggregatorOptions): string {
  if (input.length === 0) return acc;
  if (acc.length === 0) return input;
  if (!o.distinct) return acc + o.delimiter + input;
  const seen = new Set(acc.split(o.delimiter));
  let out = acc;
  for (const token of input.split(o.delimiter)) {
    if (token.length === 0 || seen.has(token)) continue;
    seen.add(token);
    out += o.delimiter + token;
  }
  return out;
}

/** A value's identity for equality (Java's equals of the internal value): its JSON text under its type (-0.0 kept). */
const identity = (type: DataType, v: Value): string => toJsonText(toJsonValue(type, v));

/** Java's collect: arrays concatenated (distinct: each element once), retraction removing one equal element per element retracted. */
function collect(element: DataType, distinct: boolean): FieldAggregator {
  const agg = (a: Value, i: Value): Value => {
      if (a === null && i === null) return null;
      if ((a === null || i === null) && !distinct) return a === null ? i : a;
      const all = [...((a ?? []) as Value[]), ...((i ?? []) as Value[])];
      if (!distinct) return all;
      const seen = new Set<string>();
      return all.filter((x) => {
        const k = identity(element, x);
        if (seen.has(k)) return false;
        seen.add(k);
        return true;
      });
  };
  return {
    agg,
    aggReversed: agg,
    retract: (a, r) => {
      if (a === null) return null;
      if (r === null || (r as Value[]).length === 0) return a;
      const pending = (r as Value[]).map((x) => identity(element, x));
      return (a as Value[]).filter((x) => {
        const at = pending.indexOf(identity(element, x));
        if (at < 0) return true;
        pending.splice(at, 1);
        return false;
      });
    },
    reset: () => undefined,
  };
}

/** Java's merge_map: the input's entries over the accumulator's; a retraction removes the keys it names. */
function mergeMap(key: DataType): FieldAggregator {
  type Entry = [Value, Value];
  return {
    agg: (a, i) => {
      if (a === null || i === null) return a === null ? i : a;
      const merged = new Map<string, Entry>();
      for (const e of [...(a as Entry[]), ...(i as Entry[])]) merged.set(identity(key, e[0]), e);
      return [...merged.values()] as Value;
    },
    retract: (a, r) => {
      if (a === null) return null;
      if (r === null || (r as Entry[]).length === 0) return a;
      const gone = new Set((r as Entry[]).map((e) => identity(key, e[0])));
      return (a as Entry[]).filter((e) => !gone.has(identity(key, e[0]))) as Value;
    },
    reset: () => undefined,
  };
}

interface Arithmetic {
  add(a: Value, b: Value): Value;
  subtract(a: Value, b: Value): Value;
  multiply(a: Value, b: Value): Value;
  divide(a: Value, b: Value): Value;
  negate(a: Value): Value;
}

const INT64 = (x: bigint): bigint => BigInt.asIntN(64, x);
const divisionByZero = (): Error => dataInvalid("product retraction divides by zero (Java: ArithmeticException: / by zero)");

/** Java's arithmetic on a numeric type's values (wrapping integers, float rounding, Decimal's rules). */
function arithmetic(type: DataType): Arithmetic {
  switch (type.root) {
    case "TINYINT":
    case "SMALLINT": {
      const bits = type.root === "TINYINT" ? 24 : 16;
      const wrap = (x: number): number => (x << bits) >> bits;
      return {
        add: (a, b) => wrap((a as number) + (b as number)),
        subtract: (a, b) => wrap((a as number) - (b as number)),
        multiply: (a, b) => wrap(Math.imul(a as number, b as number)),
        divide: (a, b) => {
          if (b === 0) throw divisionByZero();
          return wrap(Math.trunc((a as number) / (b as number)));
        },
        negate: (a) => wrap(-(a as number)),
      };
    }
    case "INT":
      return {
        add: (a, b) => ((a as number) + (b as number)) | 0,
        subtract: (a, b) => ((a as number) - (b as number)) | 0,
        multiply: (a, b) => Math.imul(a as number, b as number),
        divide: (a, b) => {
          if (b === 0) throw divisionByZero();
          return Math.trunc((a as number) / (b as number)) | 0;
        },
        negate: (a) => -(a as number) | 0,
      };
    case "BIGINT":
      return {
        add: (a, b) => INT64((a as bigint) + (b as bigint)),
        subtract: (a, b) => INT64((a as bigint) - (b as bigint)),
        multiply: (a, b) => INT64((a as bigint) * (b as bigint)),
        divide: (a, b) => {
          if (b === 0n) throw divisionByZero();
          return INT64((a as bigint) / (b as bigint));
        },
        negate: (a) => INT64(-(a as bigint)),
      };
    case "FLOAT":
    case "DOUBLE": {
      const round = type.root === "FLOAT" ? Math.fround : (x: number): number => x;
      return {
        add: (a, b) => round((a as number) + (b as number)),
        subtract: (a, b) => round((a as number) - (b as number)),
        multiply: (a, b) => round((a as number) * (b as number)),
        divide: (a, b) => round((a as number) / (b as number)),
        negate: (a) => -(a as number),
      };
    }
    case "DECIMAL":
      return decimalArithmetic(type.precision, type.scale);
    default:
      throw dataInvalid(`type ${type.root} is not numeric`);
  }
}

const digits = (x: bigint): number => (x < 0n ? -x : x).toString().length;
const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

/** Decimal arithmetic on unscaled values of DECIMAL(precision, scale), as Java's Decimal and DecimalUtils do it. */
function decimalArithmetic(precision: number, scale: number): Arithmetic {
  const pow = 10n ** BigInt(scale);
  // Decimal.fromBigDecimal: already at the scale here, so only the precision check (null beyond it).
  const fit = (x: bigint): Value => (digits(x) > precision ? null : x);
  // DecimalUtils.add/subtract: a compact decimal (precision ≤ 18) keeps the exact long, whatever its digits.
  const compact = (x: bigint): Value => (precision <= 18 && x >= INT64_MIN && x <= INT64_MAX ? x : fit(x));
  /** a / b rounded HALF_UP (away from zero at .5), for b > 0. */
  const halfUp = (a: bigint, b: bigint): bigint => {
    const q = a / b;
    const r = a % b;
    return 2n * (r < 0n ? -r : r) >= b ? q + (a < 0n ? -1n : 1n) : q;
  };
  return {
    add: (a, b) => compact((a as bigint) + (b as bigint)),
    subtract: (a, b) => compact((a as bigint) - (b as bigint)),
    // BigDecimal.multiply (scale 2s), then setScale(s, HALF_UP).
    multiply: (a, b) => fit(halfUp((a as bigint) * (b as bigint), pow)),
    negate: (a) => fit(-(a as bigint)),
    // BigDecimal.divide without a MathContext: exact, or ArithmeticException when the quotient does not terminate;
    // then setScale(s, HALF_UP).
    divide: (a, b) => {
      let n = a as bigint;
      let d = b as bigint;
      if (d === 0n) throw divisionByZero();
      if (d < 0n) {
        n = -n;
        d = -d;
      }
      // The quotient terminates when the reduced denominator has no prime factor but 2 and 5.
      let rest = d / gcd(n < 0n ? -n : n, d);
      for (const p of [2n, 5n]) while (rest % p === 0n) rest /= p;
      if (rest !== 1n) throw dataInvalid("product retraction: Non-terminating decimal expansion; no exact representable decimal result (Java's ArithmeticException)");
      return fit(halfUp(n * pow, d));
    },
  };
}

function gcd(a: bigint, b: bigint): bigint {
  while (b !== 0n) [a, b] = [b, a % b];
  return a;
}
