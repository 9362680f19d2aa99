/** Types of native-addon.mjs (plain JavaScript so worker threads need no TypeScript loader). */
/** Where the addon is looked for (native/parquet/natslake-parquet.node of the package root). */
export declare const ADDON_PATH: string;
/** The addon's exports (each caller declares the calls it uses); throws when it is not built or does not load. */
export declare function requireNativeAddon(): Record<string, unknown>;
