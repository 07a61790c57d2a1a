// llama.cpp for the tests: node-llama-cpp 3.21.1's bindings to its prebuilt CPU build, found
// in $KILN_NODE_PEERS (a folder holding node_modules). Exits 77 with one line when it is
// absent: the peer is a test peer, not a dependency of kiln.
import fs from "node:fs";
import path from "node:path";
import {pathToFileURL} from "node:url";

export async function loadLlama() {
    const peers = process.env.KILN_NODE_PEERS;
    const entry = peers && path.join(peers, "node_modules", "node-llama-cpp", "dist", "index.js");
    if (!entry || !fs.existsSync(entry)) {
        console.log(`skipped: node-llama-cpp absent (KILN_NODE_PEERS=${peers ?? "unset"})`);
        process.exit(77);
    }
    const {getLlama} = await import(pathToFileURL(entry).href);
    // the prebuilt CPU binaries only: never a build from source, never a GPU
    return getLlama({gpu: false, build: "never", logLevel: "error", progressLogs: false});
}
