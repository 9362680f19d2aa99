#!/usr/bin/env node
// The `natslake` command: loads the TypeScript sources through tsx, then runs the CLI.
import { register } from "tsx/esm/api";
register();
await import("../cluster/main.ts");
