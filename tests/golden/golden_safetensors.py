"""write_safetensors for the golden scripts: tensors (float32, float64,
int32) in the safetensors layout (an 8-byte header length, the JSON header
padded with spaces to 8 bytes, the data), as tierzero reads it."""
import json
import struct

import torch


def write_safetensors(path, tensors, metadata):
    header, blobs, offset = {}, [], 0
    for name, t in tensors.items():
        t = t.contiguous()
        dtype = {torch.float32: "F32", torch.float64: "F64", torch.int32: "I32"}[t.dtype]
        data = t.numpy().tobytes()
        header[name] = {"dtype": dtype, "shape": list(t.shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    header["__metadata__"] = metadata
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for b in blobs:
            f.write(b)
