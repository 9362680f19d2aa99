/** table-options.md: every table option of the registry (src/options.ts), by section, with kind, default and meaning. */
import { OPTION_FAMILIES, OPTION_GROUPS, OPTIONS, type OptionDef } from "../../src/options.ts";
import { banner, code, page, prose, table } from "./markdown.ts";

function typeOf(o: OptionDef): string {
  if (o.kind === "enum") return o.values!.map(code).join(", ");
  if (o.kind === "duration") return "duration";
  if (o.kind === "memory") return "size";
  return o.kind;
}

export function tableOptionsPage(): string {
  const sections = OPTION_GROUPS.map((g) => {
    const rows = OPTIONS.filter((o) => o.group === g).map((o) => [code(o.key), typeOf(o), o.default === undefined ? "" : code(o.default), prose(o.description)]);
    const families = OPTION_FAMILIES.filter((f) => f.group === g).map((f) => [code(f.key), "", "", prose(f.description)]);
    return [`## ${g}`, table(["Option", "Type", "Default", "Meaning"], [...rows, ...families])].join("\n\n");
  });
  return page(
    banner("Table options", ["the options registry (src/options.ts)"]),
    prose(
      "A table's options are set when it is created (`natslake table create --option key=value`, repeatable) and stored in its schema, where Paimon's engines read them too. natslake refuses an option it does not know, or a value of the wrong type, at create time and names the nearest known option; it reads tables with options it does not know (other engines write them) and ignores those.",
    ),
    prose(
      "Paimon's options keep Paimon's names and defaults, so a table stays readable and writable by Paimon's engines; where natslake does less than Paimon, the meaning says so. natslake's own options carry the `natslake.` prefix. Durations are written like `250 ms`, `10 s`, `2 min`, `1 h`, `1 d` (a bare number is milliseconds); sizes like `64 kb`, `8 mb`, `1 gb` (a bare number is bytes). A `fields.<field>.…` option is set per field, with the field's name in place of `<field>`.",
    ),
    ...sections,
  );
}
