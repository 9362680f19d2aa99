// Starts pool-child.ts the way bin/natslake.mjs starts the CLI: tsx registered through its API, no --import flag.
import { register } from "tsx/esm/api";
register();
await import("./pool-child.ts");
