// llama.cpp's tokenization of a text with a GGUF file's tokenizer (node-llama-cpp 3.21.1's
// bindings to its prebuilt CPU build, the vocabulary alone loaded; no BOS, special strings
// not matched): the peer host_tokenizer_hf.sh compares kiln's GGUF exports with.
//   node llama_cpp_tokenize.mjs FILE.gguf TEXT_FILE     ids on stdout, one line
// The peers' folder is $KILN_NODE_PEERS (it holds node_modules); exit 77 when it is absent.
import fs from "node:fs";
import path from "node:path";
import {pathToFileURL} from "node:url";

const peers = process.env.KILN_NODE_PEERS;
const entry = peers && path.join(peers, "node_modules", "node-llama-cpp", "dist", "index.js");
if (!entry || !fs.existsSync(entry)) {
    console.log(`skipped: node-llama-cpp absent (KILN_NODE_PEERS=${peers ?? "unset"})`);
    process.exit(77);
}
const {getLlama} = await import(pathToFileURL(entry).href);
const [modelPath, textPath] = process.argv.slice(2);
const llama = await getLlama({gpu: false, build: "never", logLevel: "error", progressLogs: false});
const model = await llama.loadModel({modelPath, vocabOnly: true});
console.log(model.tokenize(fs.readFileSync(textPath, "utf8"), false).join(" "));
await model.dispose();
