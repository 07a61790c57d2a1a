// llama.cpp's tokenization of a text with a GGUF file's tokenizer (node-llama-cpp 3.21.1's
// bindings to its prebuilt CPU build, the vocabulary alone loaded; no BOS, special strings
// not matched): the peer host_tokenizer_hf.sh compares kiln's GGUF exports with.
//   node llama_cpp_tokenize.mjs FILE.gguf TEXT_FILE     ids on stdout, one line
// The peers' folder is $KILN_NODE_PEERS (it holds node_modules); exit 77 when it is absent.
import fs from "node:fs";
import {loadLlama} from "./llama/node_llama_cpp.mjs";

const [modelPath, textPath] = process.argv.slice(2);
const llama = await loadLlama();
const model = await llama.loadModel({modelPath, vocabOnly: true});
console.log(model.tokenize(fs.readFileSync(textPath, "utf8"), false).join(" "));
await model.dispose();
