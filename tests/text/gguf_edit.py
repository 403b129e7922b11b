"""Rewrites the metadata of a tensor-less GGUF (a vocabulary-only file) quickly, by
copying the encoded key/value records byte for byte and re-encoding only the changed
ones. The gguf package's writer re-encodes every one of ~100k vocabulary strings, which
takes seconds per file; the tests derive dozens of files.
"""
import struct

STRING, ARRAY = 8, 9
_SCALAR = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}


def _skip_value(buf, pos, vtype):
    if vtype == STRING:
        (n,) = struct.unpack_from("<Q", buf, pos)
        return pos + 8 + n
    if vtype == ARRAY:
        sub, n = struct.unpack_from("<IQ", buf, pos)
        pos += 12
        if sub == STRING:
            for _ in range(n):
                (m,) = struct.unpack_from("<Q", buf, pos)
                pos += 8 + m
            return pos
        return pos + n * struct.calcsize(_SCALAR[sub])
    return pos + struct.calcsize(_SCALAR[vtype])


def read(path):
    """[(key, vtype, encoded value bytes)] of a tensor-less GGUF."""
    buf = open(path, "rb").read()
    magic, version, n_tensors, n_kv = struct.unpack_from("<4sIQQ", buf, 0)
    if magic != b"GGUF" or n_tensors != 0:
        raise ValueError(f"{path}: not a tensor-less GGUF")
    pos, records = 24, []
    for _ in range(n_kv):
        (klen,) = struct.unpack_from("<Q", buf, pos)
        key = buf[pos + 8:pos + 8 + klen].decode()
        pos += 8 + klen
        (vtype,) = struct.unpack_from("<I", buf, pos)
        pos += 4
        end = _skip_value(buf, pos, vtype)
        records.append((key, vtype, buf[pos:end]))
        pos = end
    return version, records


def encode_string(s):
    b = s.encode() if isinstance(s, str) else s
    return struct.pack("<Q", len(b)) + b


def encode_scalar(vtype, v):
    return struct.pack(_SCALAR[vtype], v)


def strings_of(value):
    """Decodes an encoded string array into a list of bytes."""
    sub, n = struct.unpack_from("<IQ", value, 0)
    assert sub == STRING
    pos, out = 12, []
    for _ in range(n):
        (m,) = struct.unpack_from("<Q", value, pos)
        out.append(value[pos + 8:pos + 8 + m])
        pos += 8 + m
    return out


def append_to_array(value, sub, items):
    """An encoded array with `items` (already encoded elements) appended."""
    sub0, n = struct.unpack_from("<IQ", value, 0)
    assert sub0 == sub
    return struct.pack("<IQ", sub, n + len(items)) + value[12:] + b"".join(items)


def write(path, version, records):
    out = [struct.pack("<4sIQQ", b"GGUF", version, 0, len(records))]
    for key, vtype, value in records:
        out.append(encode_string(key) + struct.pack("<I", vtype) + value)
    data = b"".join(out)
    data += b"\0" * (-len(data) % 32)  # the data section starts aligned, even when empty
    with open(path, "wb") as f:
        f.write(data)


def set_value(records, key, vtype, value):
    """Replaces (or adds) one record; value is already encoded."""
    for i, (k, _, _) in enumerate(records):
        if k == key:
            records[i] = (key, vtype, value)
            return records
    records.append((key, vtype, value))
    return records
