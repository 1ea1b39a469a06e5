/** assets/web/'s files by name: their text (pagefiles.js). */
export declare const PAGE_FILES: ReadonlyMap<string, string>;
