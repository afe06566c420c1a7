// The npm package the tests import: build/pkg (make node), or the folder DEADLETTER_PKG names
// (another build of the package, e.g. one installed elsewhere).
import { pathToFileURL } from "node:url";

const given = process.env.DEADLETTER_PKG;
/** The package's folder, as a URL ending in "/". */
export const PKG = given ? pathToFileURL(`${given.replace(/\/$/, "")}/`) : new URL("../../build/pkg/", import.meta.url);

/** The Node entry (node/index.js) of the package. */
export const deadletter = await import(new URL("node/index.js", PKG));
