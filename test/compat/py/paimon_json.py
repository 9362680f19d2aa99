"""Paimon types and the JSON value conventions shared by paimon_read.py and paimon_write.py.

The rendering (`render`) reproduces `toJsonValue` in src/format/values.ts, so that rows read by pypaimon can be
compared with rows read by natslake after JSON.parse:

  BOOLEAN                        true / false
  TINYINT, SMALLINT, INT         number
  BIGINT                         number when |v| <= 2^53-1, else its decimal string
  FLOAT, DOUBLE                  number (FLOAT: the double value of the float32); NaN / Infinity / -Infinity as strings
  DECIMAL(p, s)                  plain string with exactly s fraction digits ("-0.05", "12.3400", never an exponent)
  CHAR, VARCHAR, STRING          string
  BINARY, VARBINARY, BYTES       base64 (standard alphabet, padded)
  DATE                           "YYYY-MM-DD"
  TIME(p)                        "HH:MM:SS" when p = 0, else "HH:MM:SS." + min(p, 3) digits (truncated)
  TIMESTAMP(p)                   "YYYY-MM-DDTHH:MM:SS" + ("." + exactly p digits, truncated, when p > 0)
  TIMESTAMP(p) WITH LOCAL TZ     the same in UTC, plus "Z"
  ARRAY, MULTISET                list
  MAP                            object when the key type is CHAR/VARCHAR/STRING, else a list of [key, value]
  ROW                            object in field order
  null                           null

`from_json` is the inverse used by the writer: it turns such JSON values (and the other inputs natslake accepts:
numbers for BIGINT/DECIMAL, epoch millis for timestamps, days for dates) into values pyarrow accepts for the Arrow
type pypaimon uses for the column.

No pypaimon import here: the type grammar is parsed independently, from the schema JSON form or from SQL text.
"""

import base64
import datetime as dt
import decimal
import math
import re
import struct

MAX_SAFE_INTEGER = 2 ** 53 - 1
MAX_LENGTH = 2147483647
_EPOCH = dt.datetime(1970, 1, 1)
_EPOCH_DATE = dt.date(1970, 1, 1)
_NANOS_PER_SECOND = 10 ** 9
_MS_PER_DAY = 86_400_000
_DECIMAL_CONTEXT = decimal.Context(prec=200, rounding=decimal.ROUND_HALF_UP)


class PaimonType:
    """One node of a Paimon type: `root` is the logical root (STRING is VARCHAR(MAX), BYTES is VARBINARY(MAX))."""

    def __init__(self, root, nullable=True, precision=None, scale=None, length=None,
                 element=None, key=None, value=None, fields=None):
        self.root = root
        self.nullable = nullable
        self.precision = precision
        self.scale = scale
        self.length = length
        self.element = element
        self.key = key
        self.value = value
        self.fields = fields  # list of (name, PaimonType) for ROW

    def __repr__(self):
        return "PaimonType(%s)" % type_to_sql(self)


class TypeSyntaxError(ValueError):
    pass


# ----------------------------------------------------------------------------------------------------------------
# SQL text: "DECIMAL(10, 2) NOT NULL", "MAP<STRING, ARRAY<INT>>", "ROW<a INT, `b c` STRING>"

_TOKEN_RE = re.compile(r"\s*(?:(`(?:[^`]|``)*`)|('(?:[^']|'')*')|([(),<>])|([^\s(),<>`']+))")


def _tokenize(text):
    tokens = []
    pos = 0
    while pos < len(text):
        if text[pos:].strip() == "":
            break
        m = _TOKEN_RE.match(text, pos)
        if not m or m.end() == pos:
            raise TypeSyntaxError("cannot tokenize type %r at offset %d" % (text, pos))
        tokens.append(next(g for g in m.groups() if g is not None))
        pos = m.end()
    return tokens


class _SqlParser:
    def __init__(self, text):
        self.text = text
        self.tokens = _tokenize(text)
        self.pos = 0

    def fail(self, msg):
        raise TypeSyntaxError("cannot parse type %r: %s" % (self.text, msg))

    def peek(self, ahead=0):
        i = self.pos + ahead
        return self.tokens[i] if i < len(self.tokens) else None

    def peek_upper(self, ahead=0):
        t = self.peek(ahead)
        return t.upper() if t is not None else None

    def expect(self, tok):
        if self.peek() != tok:
            self.fail("expected %r but found %r" % (tok, self.peek()))
        self.pos += 1

    def words(self, *ws):
        for w in ws:
            if self.peek_upper() != w:
                self.fail("expected %r" % w)
            self.pos += 1

    def params(self):
        if self.peek() != "(":
            return []
        self.pos += 1
        out = []
        while True:
            t = self.peek()
            if t is None or not t.isdigit():
                self.fail("expected a number but found %r" % t)
            out.append(int(t))
            self.pos += 1
            if self.peek() == ",":
                self.pos += 1
                continue
            self.expect(")")
            return out

    def ident(self):
        t = self.peek()
        if t is None:
            self.fail("expected a field name")
        self.pos += 1
        if t.startswith("`"):
            return t[1:-1].replace("``", "`")
        return t

    def parse_all(self):
        t = self.parse_type()
        if self.pos != len(self.tokens):
            self.fail("unexpected %r" % self.peek())
        return t

    def parse_type(self):
        word = self.peek_upper()
        if word is None:
            self.fail("expected a type")
        self.pos += 1
        if word in ("BOOLEAN", "TINYINT", "SMALLINT", "BIGINT", "FLOAT", "DATE"):
            t = PaimonType(word)
        elif word in ("INT", "INTEGER"):
            t = PaimonType("INT")
        elif word == "DOUBLE":
            if self.peek_upper() == "PRECISION":
                self.pos += 1
            t = PaimonType("DOUBLE")
        elif word == "STRING":
            t = PaimonType("VARCHAR", length=MAX_LENGTH)
        elif word == "BYTES":
            t = PaimonType("VARBINARY", length=MAX_LENGTH)
        elif word in ("CHAR", "VARCHAR", "BINARY", "VARBINARY"):
            p = self.params()
            default = MAX_LENGTH if word.startswith("VAR") else 1
            t = PaimonType(word, length=p[0] if p else default)
        elif word in ("DECIMAL", "NUMERIC", "DEC"):
            p = self.params()
            t = PaimonType("DECIMAL", precision=p[0] if p else 10, scale=p[1] if len(p) > 1 else 0)
        elif word == "TIME":
            p = self.params()
            if self.peek_upper() == "WITHOUT":
                self.words("WITHOUT", "TIME", "ZONE")
            t = PaimonType("TIME", precision=p[0] if p else 0)
        elif word in ("TIMESTAMP", "TIMESTAMP_LTZ"):
            p = self.params()
            ltz = word == "TIMESTAMP_LTZ"
            if self.peek_upper() == "WITH":
                self.words("WITH", "LOCAL", "TIME", "ZONE")
                ltz = True
            elif self.peek_upper() == "WITHOUT":
                self.words("WITHOUT", "TIME", "ZONE")
            t = PaimonType("TIMESTAMP_LTZ" if ltz else "TIMESTAMP", precision=p[0] if p else 6)
        elif word in ("ARRAY", "MULTISET"):
            self.expect("<")
            element = self.parse_type()
            self.expect(">")
            t = PaimonType(word, element=element)
        elif word == "MAP":
            self.expect("<")
            key = self.parse_type()
            self.expect(",")
            value = self.parse_type()
            self.expect(">")
            t = PaimonType("MAP", key=key, value=value)
        elif word == "ROW":
            close = {"<": ">", "(": ")"}.get(self.peek())
            if close is None:
                self.fail("expected '<' after ROW")
            self.pos += 1
            fields = []
            while self.peek() != close:
                name = self.ident()
                ftype = self.parse_type()
                if self.peek_upper() == "COMMENT":
                    self.pos += 2
                fields.append((name, ftype))
                if self.peek() == ",":
                    self.pos += 1
                elif self.peek() != close:
                    self.fail("expected ',' or %r in ROW but found %r" % (close, self.peek()))
            self.pos += 1
            t = PaimonType("ROW", fields=fields)
        else:
            self.fail("unknown type %r" % self.tokens[self.pos - 1])
        if self.peek_upper() == "NOT" and self.peek_upper(1) == "NULL":
            self.pos += 2
            t.nullable = False
        elif self.peek_upper() == "NULL":
            self.pos += 1
        return t


def parse_sql_type(text):
    """Parses one type in Paimon SQL text."""
    return _SqlParser(text).parse_all()


def parse_json_type(j):
    """Parses a type in the schema-file JSON form (Java's or pypaimon's `DataType.to_dict()`)."""
    if isinstance(j, str):
        return parse_sql_type(j)
    if not isinstance(j, dict) or "type" not in j:
        raise TypeSyntaxError("cannot parse type %r" % (j,))
    text = j["type"].strip()
    base = re.split(r"[\s<(]", text, maxsplit=1)[0].upper()
    if "nullable" in j and j["nullable"] is not None:
        nullable = bool(j["nullable"])
    else:
        nullable = not re.search(r"\bNOT\s+NULL\s*$", text, re.IGNORECASE)
    if base in ("ARRAY", "MULTISET"):
        return PaimonType(base, nullable=nullable, element=parse_json_type(j["element"]))
    if base == "MAP":
        return PaimonType("MAP", nullable=nullable, key=parse_json_type(j["key"]), value=parse_json_type(j["value"]))
    if base == "ROW":
        fields = [(f["name"], parse_json_type(f["type"])) for f in j.get("fields", [])]
        return PaimonType("ROW", nullable=nullable, fields=fields)
    return parse_sql_type(text)


def type_to_sql(t):
    """Paimon's canonical SQL text (as Java's asSQLString and src/format/data-types.ts typeToSql write it)."""
    nn = "" if t.nullable else " NOT NULL"
    r = t.root
    if r in ("BOOLEAN", "TINYINT", "SMALLINT", "INT", "BIGINT", "FLOAT", "DOUBLE", "DATE"):
        return r + nn
    if r == "TIME":
        return "TIME(%d)%s" % (t.precision, nn)
    if r == "DECIMAL":
        return "DECIMAL(%d, %d)%s" % (t.precision, t.scale, nn)
    if r == "CHAR":
        return "CHAR(%d)%s" % (t.length, nn)
    if r == "VARCHAR":
        return ("STRING" if t.length == MAX_LENGTH else "VARCHAR(%d)" % t.length) + nn
    if r == "BINARY":
        return "BINARY(%d)%s" % (t.length, nn)
    if r == "VARBINARY":
        return ("BYTES" if t.length == MAX_LENGTH else "VARBINARY(%d)" % t.length) + nn
    if r == "TIMESTAMP":
        return "TIMESTAMP(%d)%s" % (t.precision, nn)
    if r == "TIMESTAMP_LTZ":
        return "TIMESTAMP(%d) WITH LOCAL TIME ZONE%s" % (t.precision, nn)
    if r in ("ARRAY", "MULTISET"):
        return "%s<%s>%s" % (r, type_to_sql(t.element), nn)
    if r == "MAP":
        return "MAP<%s, %s>%s" % (type_to_sql(t.key), type_to_sql(t.value), nn)
    if r == "ROW":
        inner = ", ".join("`%s` %s" % (n.replace("`", "``"), type_to_sql(ft)) for n, ft in t.fields)
        return "ROW<%s>%s" % (inner, nn)
    raise TypeSyntaxError("unknown type root %r" % r)


def type_to_json(t):
    """The schema-file JSON form (nested types as objects, without field ids: pypaimon assigns them)."""
    nn = "" if t.nullable else " NOT NULL"
    if t.root in ("ARRAY", "MULTISET"):
        return {"type": t.root + nn, "element": type_to_json(t.element)}
    if t.root == "MAP":
        return {"type": "MAP" + nn, "key": type_to_json(t.key), "value": type_to_json(t.value)}
    if t.root == "ROW":
        return {"type": "ROW" + nn, "fields": [{"name": n, "type": type_to_json(ft)} for n, ft in t.fields]}
    return type_to_sql(t)


# ----------------------------------------------------------------------------------------------------------------
# Rendering (toJsonValue)

def _float32(f):
    try:
        return struct.unpack("<f", struct.pack("<f", f))[0]
    except OverflowError:
        return math.copysign(math.inf, f)


def _render_float(f, single):
    f = float(f)
    if math.isnan(f):
        return "NaN"
    if math.isinf(f):
        return "Infinity" if f > 0 else "-Infinity"
    return _float32(f) if single else f


def unscaled_of(d, scale):
    """The unscaled integer of a Decimal at `scale`; refuses to round (a read value always has exactly `scale`)."""
    sign, digits, exponent = d.as_tuple()
    if not isinstance(exponent, int):
        raise ValueError("non-finite decimal %r" % d)
    n = int("".join(map(str, digits)) or "0")
    shift = exponent + scale
    if shift >= 0:
        n *= 10 ** shift
    else:
        q, rem = divmod(n, 10 ** -shift)
        if rem:
            raise ValueError("decimal %s has more than %d fraction digits" % (d, scale))
        n = q
    return -n if sign else n


def unscaled_to_string(unscaled, scale):
    neg = unscaled < 0
    digits = str(-unscaled if neg else unscaled)
    if scale > 0:
        digits = digits.rjust(scale + 1, "0")
        digits = digits[:-scale] + "." + digits[-scale:]
    return ("-" if neg else "") + digits


def epoch_nanos(v):
    """Epoch nanoseconds of a timestamp value: datetime (naive = wall clock as if UTC), pandas Timestamp, int millis."""
    if hasattr(v, "value") and hasattr(v, "nanosecond"):  # pandas.Timestamp: .value is UTC epoch nanos
        return int(v.value)
    if isinstance(v, dt.datetime):
        if v.tzinfo is not None:
            v = v.astimezone(dt.timezone.utc).replace(tzinfo=None)
        delta = v - _EPOCH
        return (delta.days * 86400 + delta.seconds) * _NANOS_PER_SECOND + delta.microseconds * 1000
    if isinstance(v, int) and not isinstance(v, bool):
        return v * 1_000_000
    raise TypeError("not a timestamp: %r" % (v,))


def format_timestamp(nanos, precision, ltz):
    secs, frac = divmod(nanos, _NANOS_PER_SECOND)
    d = _EPOCH + dt.timedelta(seconds=secs)
    text = "%04d-%02d-%02dT%02d:%02d:%02d" % (d.year, d.month, d.day, d.hour, d.minute, d.second)
    if precision > 0:
        text += "." + ("%09d" % frac)[:precision]
    return text + ("Z" if ltz else "")


def format_date(days):
    d = _EPOCH_DATE + dt.timedelta(days=days)
    return "%04d-%02d-%02d" % (d.year, d.month, d.day)


def format_time(millis_of_day, precision):
    s, ms = divmod(millis_of_day, 1000)
    h, rest = divmod(s, 3600)
    m, s = divmod(rest, 60)
    text = "%02d:%02d:%02d" % (h, m, s)
    if precision == 0:
        return text
    return text + "." + ("%03d" % ms)[:min(precision, 3)]


def _days_of(v):
    if isinstance(v, dt.datetime):
        v = v.date()
    if isinstance(v, dt.date):
        return (v - _EPOCH_DATE).days
    if isinstance(v, int) and not isinstance(v, bool):
        return v
    raise TypeError("not a date: %r" % (v,))


def _millis_of_day(v):
    if isinstance(v, dt.time):
        return ((v.hour * 60 + v.minute) * 60 + v.second) * 1000 + v.microsecond // 1000
    if isinstance(v, int) and not isinstance(v, bool):
        return v
    if isinstance(v, dt.timedelta):  # pyarrow may hand durations for out-of-range times
        return v // dt.timedelta(milliseconds=1)
    raise TypeError("not a time: %r" % (v,))


def render(t, v):
    """JSON-ready value of `v` (as pyarrow's to_pylist / pypaimon's GenericRow give it) for Paimon type `t`."""
    if v is None:
        return None
    r = t.root
    if r == "BOOLEAN":
        return bool(v)
    if r in ("TINYINT", "SMALLINT", "INT"):
        return int(v)
    if r == "BIGINT":
        n = int(v)
        return n if -MAX_SAFE_INTEGER <= n <= MAX_SAFE_INTEGER else str(n)
    if r in ("FLOAT", "DOUBLE"):
        return _render_float(v, r == "FLOAT")
    if r == "DECIMAL":
        d = v if isinstance(v, decimal.Decimal) else decimal.Decimal(str(v))
        return unscaled_to_string(unscaled_of(d, t.scale), t.scale)
    if r in ("CHAR", "VARCHAR"):
        return v if isinstance(v, str) else bytes(v).decode("utf-8")
    if r in ("BINARY", "VARBINARY"):
        return base64.b64encode(bytes(v)).decode("ascii")
    if r == "DATE":
        return format_date(_days_of(v))
    if r == "TIME":
        return format_time(_millis_of_day(v), t.precision)
    if r in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        return format_timestamp(epoch_nanos(v), max(t.precision, 0), r == "TIMESTAMP_LTZ")
    if r in ("ARRAY", "MULTISET"):
        return [render(t.element, x) for x in v]
    if r == "MAP":
        pairs = v.items() if isinstance(v, dict) else v
        if t.key.root in ("CHAR", "VARCHAR"):
            out = {}
            for k, x in pairs:
                out[k] = render(t.value, x)
            return out
        return [[render(t.key, k), render(t.value, x)] for k, x in pairs]
    if r == "ROW":
        return {name: render(ft, v.get(name)) for name, ft in t.fields}
    raise TypeError("cannot render type %s" % type_to_sql(t))


def render_partition_value(t, v, default_name):
    """A partition value as text: String(toJsonValue(v)) in JS terms; null becomes the default partition name."""
    j = render(t, v)
    if j is None:
        return default_name
    if isinstance(j, bool):
        return "true" if j else "false"
    if isinstance(j, float) and j.is_integer() and abs(j) < 1e21:
        return str(int(j))
    return str(j)


# ----------------------------------------------------------------------------------------------------------------
# JSON input → pyarrow-ready values (for the Arrow types pypaimon maps Paimon types to)

class DataError(ValueError):
    pass


_TS_RE = re.compile(
    r"^(\d{4,})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?)?(Z|[+-]\d{2}:?\d{2})?$")
_TIME_RE = re.compile(r"^(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?$")
_DATE_RE = re.compile(r"^(-?\d{4,})-(\d{2})-(\d{2})$")
_UNIT_NANOS = {"s": 10 ** 9, "ms": 10 ** 6, "us": 10 ** 3, "ns": 1}


def parse_timestamp_nanos(x, where):
    """ISO-8601 text (zone applied when given, else read as UTC) or epoch millis → epoch nanos."""
    if isinstance(x, bool):
        raise DataError("%s: expected a timestamp, got %r" % (where, x))
    if isinstance(x, (int, float, decimal.Decimal)):
        d = decimal.Decimal(x) if not isinstance(x, float) else decimal.Decimal(repr(x))
        return int((d * 1_000_000).to_integral_value(rounding=decimal.ROUND_FLOOR))
    if not isinstance(x, str):
        raise DataError("%s: expected a timestamp, got %r" % (where, x))
    m = _TS_RE.match(x.strip())
    if not m:
        raise DataError("%s: %r is not an ISO-8601 timestamp" % (where, x))
    y, mo, d, h, mi, s, frac, zone = m.groups()
    base = dt.datetime(int(y), int(mo), int(d), int(h or 0), int(mi or 0), int(s or 0))
    delta = base - _EPOCH
    nanos = (delta.days * 86400 + delta.seconds) * _NANOS_PER_SECOND + int((frac or "").ljust(9, "0"))
    if zone and zone != "Z":
        sign = -1 if zone[0] == "-" else 1
        digits = zone[1:].replace(":", "")
        offset_min = int(digits[:2]) * 60 + int(digits[2:])
        nanos -= sign * offset_min * 60 * _NANOS_PER_SECOND
    return nanos


def _truncate_nanos(nanos, precision):
    unit = 10 ** (9 - min(max(precision, 0), 9))
    return nanos // unit * unit


def parse_decimal(x, precision, scale, where):
    if isinstance(x, bool) or not isinstance(x, (str, int, float, decimal.Decimal)):
        raise DataError("%s: expected a decimal, got %r" % (where, x))
    text = repr(x) if isinstance(x, float) else str(x).strip()
    try:
        d = decimal.Decimal(text)
    except decimal.InvalidOperation:
        raise DataError("%s: %r is not a decimal number" % (where, x)) from None
    if not d.is_finite():
        raise DataError("%s: %r is not a finite decimal" % (where, x))
    q = d.quantize(decimal.Decimal(1).scaleb(-scale), context=_DECIMAL_CONTEXT)
    unscaled = unscaled_of(q, scale)
    if unscaled != 0 and len(str(abs(unscaled))) > precision:
        raise DataError("%s: %s has more than %d significant digits" % (where, x, precision))
    return q


def _parse_float(x, where):
    if isinstance(x, bool):
        raise DataError("%s: expected a number, got %r" % (where, x))
    if isinstance(x, (int, float, decimal.Decimal)):
        return float(x)
    if isinstance(x, str) and x.strip() != "":
        try:
            return float(x.strip())
        except ValueError:
            pass
    raise DataError("%s: expected a number, got %r" % (where, x))


_INT_RANGES = {"TINYINT": 2 ** 7, "SMALLINT": 2 ** 15, "INT": 2 ** 31, "BIGINT": 2 ** 63}


def _parse_int(x, root, where):
    n = None
    if isinstance(x, bool):
        n = None
    elif isinstance(x, int):
        n = x
    elif isinstance(x, decimal.Decimal) and x == x.to_integral_value():
        n = int(x)
    elif isinstance(x, float) and x.is_integer():
        n = int(x)
    elif isinstance(x, str) and re.fullmatch(r"\s*-?\d+\s*", x):
        n = int(x)
    lim = _INT_RANGES[root]
    if n is None or not -lim <= n < lim:
        raise DataError("%s: expected an integer in range for %s, got %r" % (where, root, x))
    return n


def from_json(t, x, arrow_type, where):
    """Converts one JSON input value of Paimon type `t` to a value pyarrow accepts for `arrow_type`."""
    if x is None:
        if not t.nullable:
            raise DataError("%s is NOT NULL but the value is missing" % where)
        return None
    r = t.root
    if r == "BOOLEAN":
        if isinstance(x, bool):
            return x
        if x in ("true", "false"):
            return x == "true"
        raise DataError("%s: expected a boolean, got %r" % (where, x))
    if r in _INT_RANGES:
        return _parse_int(x, r, where)
    if r in ("FLOAT", "DOUBLE"):
        return _parse_float(x, where)
    if r == "DECIMAL":
        return parse_decimal(x, t.precision, t.scale, where)
    if r in ("CHAR", "VARCHAR"):
        if not isinstance(x, str):
            raise DataError("%s: expected a string, got %r" % (where, x))
        return x
    if r in ("BINARY", "VARBINARY"):
        if isinstance(x, str):
            return base64.b64decode(x, validate=True)
        if isinstance(x, list) and all(isinstance(b, int) and 0 <= b < 256 for b in x):
            return bytes(x)
        raise DataError("%s: expected base64 bytes, got %r" % (where, x))
    if r == "DATE":
        if isinstance(x, int) and not isinstance(x, bool):
            return x
        m = _DATE_RE.match(x.strip()) if isinstance(x, str) else None
        if not m:
            raise DataError("%s: expected a date 'YYYY-MM-DD', got %r" % (where, x))
        return (dt.date(int(m.group(1)), int(m.group(2)), int(m.group(3))) - _EPOCH_DATE).days
    if r == "TIME":
        if isinstance(x, int) and not isinstance(x, bool) and 0 <= x < _MS_PER_DAY:
            ms = x
        else:
            m = _TIME_RE.match(x) if isinstance(x, str) else None
            if not m:
                raise DataError("%s: expected a time 'HH:MM:SS[.fff]', got %r" % (where, x))
            h, mi, s, frac = m.groups()
            ms = ((int(h) * 60 + int(mi)) * 60 + int(s or 0)) * 1000 + int((frac or "0").ljust(3, "0")[:3])
        unit = getattr(arrow_type, "unit", "ms")
        return ms * 1_000_000 // _UNIT_NANOS[unit]
    if r in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        nanos = _truncate_nanos(parse_timestamp_nanos(x, where), t.precision)
        return nanos // _UNIT_NANOS[arrow_type.unit]
    if r in ("ARRAY", "MULTISET"):
        if not isinstance(x, list):
            raise DataError("%s: expected an array, got %r" % (where, x))
        et = arrow_type.value_type
        return [from_json(t.element, e, et, "%s[%d]" % (where, i)) for i, e in enumerate(x)]
    if r == "MAP":
        if isinstance(x, dict):
            pairs = list(x.items())
        elif isinstance(x, list) and all(isinstance(p, list) and len(p) == 2 for p in x):
            pairs = [(p[0], p[1]) for p in x]
        else:
            raise DataError("%s: expected a map (object or [key, value] pairs), got %r" % (where, x))
        key_t = PaimonType(**{**vars(t.key), "nullable": False})
        return [(from_json(key_t, k, arrow_type.key_type, where + ".key"),
                 from_json(t.value, v, arrow_type.item_type, "%s[%s]" % (where, k))) for k, v in pairs]
    if r == "ROW":
        if not isinstance(x, dict):
            raise DataError("%s: expected an object, got %r" % (where, x))
        return {name: from_json(ft, x.get(name), arrow_type.field(name).type, where + "." + name)
                for name, ft in t.fields}
    raise DataError("%s: unsupported type %s" % (where, type_to_sql(t)))


def parse_partition_spec(text):
    """'k=v,k2=v2' → [(k, v), ...] (values are text; split on the first '=')."""
    out = []
    for part in text.split(","):
        if part == "":
            continue
        if "=" not in part:
            raise ValueError("bad partition spec %r: expected k=v[,k=v...]" % text)
        k, v = part.split("=", 1)
        out.append((k, v))
    return out


def partition_literal(t, text, where):
    """A partition value given as text (as render_partition_value prints it) → the Python literal pypaimon's
    predicates compare partition values with."""
    if t.root == "DATE":
        return _EPOCH_DATE + dt.timedelta(days=from_json(t, text, None, where))
    if t.root == "TIME":
        ms = from_json(t, text, None, where)
        return dt.time(ms // 3_600_000, ms // 60_000 % 60, ms // 1000 % 60, ms % 1000 * 1000)
    if t.root in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        nanos = _truncate_nanos(parse_timestamp_nanos(text, where), t.precision)
        value = _EPOCH + dt.timedelta(microseconds=nanos // 1000)
        return value.replace(tzinfo=dt.timezone.utc) if t.root == "TIMESTAMP_LTZ" else value
    return from_json(t, text, None, where)


def catalog_options(warehouse):
    """pypaimon's catalog options for a warehouse: on S3 (s3://bucket/prefix) its file system options (pypaimon 2.1.0's
    fs.s3.* names and s3.path-style-access) from the environment natslake itself uses — NATSLAKE_S3_ENDPOINT,
    AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_REGION — so both sides talk to the same store."""
    opts = {"warehouse": warehouse}
    if warehouse.startswith("s3://"):
        import os
        opts.update({
            "fs.s3.endpoint": os.environ["NATSLAKE_S3_ENDPOINT"],
            "fs.s3.accessKeyId": os.environ["AWS_ACCESS_KEY_ID"],
            "fs.s3.accessKeySecret": os.environ["AWS_SECRET_ACCESS_KEY"],
            "fs.s3.region": os.environ.get("AWS_REGION", "us-east-1"),
            "s3.path-style-access": "true",
        })
    return opts
