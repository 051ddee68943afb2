// Test-only GGUF byte writer and a catalogue of malformed files, shared by the in-process reader
// tests (tests/core/gguf_malformed_test.cpp) and the `decodebench inspect` CLI tests.
//
// The writer records the file offset of every field it writes under a name ("kv2.count",
// "ti1.offset", ...) so that a test can corrupt exactly one field of an otherwise valid file.
#pragma once

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace decodebench::testing {

/// Little-endian byte buffer with named offsets.
class GgufBytes {
 public:
  std::string data;
  std::map<std::string, uint64_t> marks;

  void mark(const std::string& name) { marks[name] = data.size(); }
  [[nodiscard]] uint64_t at(const std::string& name) const {
    const auto it = marks.find(name);
    if (it == marks.end()) throw std::logic_error("no mark " + name);
    return it->second;
  }
  void u8(uint8_t v) { data.push_back(static_cast<char>(v)); }
  void u32(uint32_t v) { raw(&v, 4); }
  void u64(uint64_t v) { raw(&v, 8); }
  void str(const std::string& s) {
    u64(s.size());
    data += s;
  }
  void raw(const void* p, size_t n) { data.append(static_cast<const char*>(p), n); }
  void pad_to(uint64_t alignment) {
    while (data.size() % alignment != 0) u8(0);
  }
  void put_u32(uint64_t at, uint32_t v) { std::memcpy(data.data() + at, &v, 4); }
  void put_u64(uint64_t at, uint64_t v) { std::memcpy(data.data() + at, &v, 8); }
  [[nodiscard]] uint64_t get_u64(uint64_t at) const {
    uint64_t v = 0;
    std::memcpy(&v, data.data() + at, 8);
    return v;
  }
  void write(const std::filesystem::path& path) const {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(data.data(), static_cast<std::streamsize>(data.size()));
    if (!out) throw std::runtime_error("cannot write " + path.string());
  }
};

/// Writes the value type and value of one metadata record; `prefix` names its marks.
using ValueWriter = std::function<void(GgufBytes&, const std::string& prefix)>;

inline ValueWriter v_u32(uint32_t v) {
  return [v](GgufBytes& b, const std::string&) {
    b.u32(4);
    b.u32(v);
  };
}
inline ValueWriter v_u64(uint64_t v) {
  return [v](GgufBytes& b, const std::string&) {
    b.u32(10);
    b.u64(v);
  };
}
inline ValueWriter v_bool(bool v) {
  return [v](GgufBytes& b, const std::string&) {
    b.u32(7);
    b.u8(v ? 1 : 0);
  };
}
inline ValueWriter v_string(const std::string& s) {
  return [s](GgufBytes& b, const std::string& prefix) {
    b.u32(8);
    b.mark(prefix + ".len");
    b.str(s);
  };
}
/// ARRAY of UINT32 (elem type id 4) or INT32 (5): marks ".count".
inline ValueWriter v_array_u32(const std::vector<uint32_t>& values, uint32_t elem_type = 4) {
  return [values, elem_type](GgufBytes& b, const std::string& prefix) {
    b.u32(9);
    b.u32(elem_type);
    b.mark(prefix + ".count");
    b.u64(values.size());
    for (uint32_t v : values) b.u32(v);
  };
}
/// ARRAY of STRING: marks ".count" and ".elem0" (length field of the first string).
inline ValueWriter v_array_str(const std::vector<std::string>& values) {
  return [values](GgufBytes& b, const std::string& prefix) {
    b.u32(9);
    b.u32(8);
    b.mark(prefix + ".count");
    b.u64(values.size());
    for (size_t k = 0; k < values.size(); ++k) {
      b.mark(prefix + ".elem" + std::to_string(k));
      b.str(values[k]);
    }
  };
}

struct KvSpec {
  std::string key;
  ValueWriter value;
};

struct TensorSpec {
  std::string name;
  std::vector<uint64_t> dims;
  uint32_t type = 0;
  uint64_t data_bytes = 0;         ///< bytes of data to write for it
  std::optional<uint64_t> offset;  ///< default: packed in order, each aligned
};

struct FileSpec {
  uint32_t version = 3;
  uint64_t alignment = 32;  ///< used for the layout (write general.alignment through `kvs`)
  std::vector<KvSpec> kvs;
  std::vector<TensorSpec> tensors;
};

/// Builds the file. Marks: "version", "tensor_count", "kv_count", "kv<i>" (key length),
/// "kv<i>.type", "kv<i>.value" (+ writer marks), "ti<i>" (name length), "ti<i>.n_dims",
/// "ti<i>.dim<d>", "ti<i>.type", "ti<i>.offset", "infos_end", "data", "t<i>", "end".
/// Tensor data bytes are a position-dependent pattern so that misplaced reads show.
inline GgufBytes build_gguf(const FileSpec& spec) {
  GgufBytes b;
  b.raw("GGUF", 4);
  b.mark("version");
  b.u32(spec.version);
  b.mark("tensor_count");
  b.u64(spec.tensors.size());
  b.mark("kv_count");
  b.u64(spec.kvs.size());
  for (size_t i = 0; i < spec.kvs.size(); ++i) {
    const std::string p = "kv" + std::to_string(i);
    b.mark(p);
    b.str(spec.kvs[i].key);
    b.mark(p + ".type");
    // The value writer starts with the type; ".value" is 4 bytes later.
    b.marks[p + ".value"] = b.data.size() + 4;
    spec.kvs[i].value(b, p);
  }
  std::vector<uint64_t> offsets;
  uint64_t next = 0;
  for (const TensorSpec& t : spec.tensors) {
    next = (next + spec.alignment - 1) / spec.alignment * spec.alignment;
    offsets.push_back(t.offset.value_or(next));
    next += t.data_bytes;
  }
  for (size_t i = 0; i < spec.tensors.size(); ++i) {
    const TensorSpec& t = spec.tensors[i];
    const std::string p = "ti" + std::to_string(i);
    b.mark(p);
    b.str(t.name);
    b.mark(p + ".n_dims");
    b.u32(static_cast<uint32_t>(t.dims.size()));
    for (size_t d = 0; d < t.dims.size(); ++d) {
      b.mark(p + ".dim" + std::to_string(d));
      b.u64(t.dims[d]);
    }
    b.mark(p + ".type");
    b.u32(t.type);
    b.mark(p + ".offset");
    b.u64(offsets[i]);
  }
  b.mark("infos_end");
  if (!spec.tensors.empty()) b.pad_to(spec.alignment);
  b.mark("data");
  const uint64_t data_start = b.data.size();
  for (size_t i = 0; i < spec.tensors.size(); ++i) {
    const uint64_t want = data_start + (spec.tensors[i].offset ? 0 : offsets[i]);
    while (b.data.size() < want) b.u8(0);
    b.mark("t" + std::to_string(i));
    for (uint64_t k = 0; k < spec.tensors[i].data_bytes; ++k) {
      b.u8(static_cast<uint8_t>((k * 7 + i * 31 + 1) & 0xFF));
    }
  }
  b.mark("end");
  return b;
}

/// The reference valid file: 6 metadata records (string, alignment, UINT32 array, STRING array,
/// empty INT32 array, bool) and 3 tensors a: F32 {8,2} (64 B), b: Q8_0 {32} (34 B),
/// c: Q4_K {256} (144 B), laid out at data offsets 0, 64, 128; the file ends with c's last byte.
inline FileSpec base_spec() {
  FileSpec s;
  s.kvs = {{"general.architecture", v_string("llama")}, {"general.alignment", v_u32(32)},
           {"test.ints", v_array_u32({1, 2, 3})},       {"test.strs", v_array_str({"ab", "c"})},
           {"test.empty", v_array_u32({}, 5)},          {"test.flag", v_bool(true)}};
  s.tensors = {{"a", {8, 2}, 0, 64, std::nullopt},
               {"b", {32}, 8, 34, std::nullopt},
               {"c", {256}, 12, 144, std::nullopt}};
  return s;
}

/// One malformed file and a fragment its error message must contain.
struct MalformedCase {
  std::string name;
  std::string bytes;
  std::string expect;  ///< substring of the message (besides "offset")
};

/// Every malformed-file case: corrupt counts, lengths, types, offsets, names and headers.
inline std::vector<MalformedCase> malformed_cases() {
  constexpr uint64_t kHuge = std::numeric_limits<uint64_t>::max();
  std::vector<MalformedCase> cases;
  const auto patched = [&](const std::string& name, const std::string& expect,
                           const std::function<void(GgufBytes&)>& patch) {
    GgufBytes b = build_gguf(base_spec());
    patch(b);
    cases.push_back({name, b.data, expect});
  };
  const auto from_spec = [&](const std::string& name, const std::string& expect,
                             const std::function<void(FileSpec&)>& edit) {
    FileSpec s = base_spec();
    edit(s);
    cases.push_back({name, build_gguf(s).data, expect});
  };

  // Header.
  patched("bad_magic", "magic", [](GgufBytes& b) { b.data[0] = 'X'; });
  patched("version_0", "version 0", [](GgufBytes& b) { b.put_u32(b.at("version"), 0); });
  patched("version_1", "GGUFv1 is not supported",
          [](GgufBytes& b) { b.put_u32(b.at("version"), 1); });
  patched("version_4", "version 4", [](GgufBytes& b) { b.put_u32(b.at("version"), 4); });
  patched("big_endian", "big-endian GGUF files are not supported",
          [](GgufBytes& b) { b.put_u32(b.at("version"), 0x03000000u); });
  cases.push_back({"empty_file", "", "too short"});
  cases.push_back({"three_bytes", "GGU", "too short"});
  cases.push_back({"magic_only", "GGUF", "version"});

  // Counts.
  patched("kv_count_huge", "metadata key/value count",
          [&](GgufBytes& b) { b.put_u64(b.at("kv_count"), kHuge); });
  patched("kv_count_size", "metadata key/value count",
          [](GgufBytes& b) { b.put_u64(b.at("kv_count"), b.data.size()); });
  patched("kv_count_plus_one", "offset", [](GgufBytes& b) { b.put_u64(b.at("kv_count"), 7); });
  patched("tensor_count_huge", "tensor count",
          [&](GgufBytes& b) { b.put_u64(b.at("tensor_count"), kHuge); });
  patched("tensor_count_2pow62", "tensor count",
          [](GgufBytes& b) { b.put_u64(b.at("tensor_count"), uint64_t{1} << 62); });
  patched("tensor_count_plus_one", "offset",
          [](GgufBytes& b) { b.put_u64(b.at("tensor_count"), 4); });
  // One short: the last tensor's info lies where the padding should be, and every tensor would be
  // read from 32 bytes too early.
  // With alignment 1 no padding shows it: the last tensor's data is left over at the end.
  {
    FileSpec s = base_spec();
    s.alignment = 1;
    s.kvs[1].value = v_u32(1);
    GgufBytes b = build_gguf(s);
    b.put_u64(b.at("tensor_count"), 2);
    cases.push_back(
        {"tensor_count_minus_one_packed", b.data, "after the last tensor's data (which ends at"});
  }
  patched("trailing_data", "byte 0x01 after the last tensor's data",
          [](GgufBytes& b) { b.data += std::string(40, '\0') + "\x01"; });
  patched("tensor_count_minus_one",
          "byte 0x01 in the padding before the data section (at 352; GGUF pads with zeros): the "
          "header's "
          "tensor count (2) is likely lower than the tensors the file describes",
          [](GgufBytes& b) { b.put_u64(b.at("tensor_count"), 2); });

  // Metadata strings and arrays.
  patched("key_length_huge", "metadata key length 18446744073709551615 runs past end of file",
          [&](GgufBytes& b) { b.put_u64(b.at("kv0"), kHuge); });
  patched("key_length_past_end", "metadata key length",
          [](GgufBytes& b) { b.put_u64(b.at("kv3"), b.data.size()); });
  from_spec("key_empty", "is empty", [](FileSpec& s) { s.kvs[5].key = ""; });
  from_spec("key_duplicate", "duplicate metadata key 'test.flag'", [](FileSpec& s) {
    s.kvs.push_back({"test.flag", v_bool(false)});
  });
  // A file's bytes are escaped in messages: a NUL would cut the message short, a newline add a
  // line of the file's own.
  from_spec("key_duplicate_nul", "duplicate metadata key 'a\\x00b\\nc'", [](FileSpec& s) {
    s.kvs.push_back({std::string("a\0b\nc", 5), v_bool(false)});
    s.kvs.push_back({std::string("a\0b\nc", 5), v_bool(true)});
  });
  patched("string_length_huge", "string length",
          [&](GgufBytes& b) { b.put_u64(b.at("kv0.len"), kHuge); });
  patched("array_count_huge", "array count 18446744073709551615",
          [&](GgufBytes& b) { b.put_u64(b.at("kv2.count"), kHuge); });
  patched("array_count_just_too_big", "array count", [](GgufBytes& b) {
    b.put_u64(b.at("kv2.count"), (b.data.size() - b.at("kv2.count") - 8) / 4 + 1);
  });
  patched("string_array_count_huge", "array count",
          [&](GgufBytes& b) { b.put_u64(b.at("kv3.count"), kHuge / 2); });
  patched("string_array_element_length_huge", "array string length",
          [&](GgufBytes& b) { b.put_u64(b.at("kv3.elem0"), kHuge - 3); });
  patched("nested_array", "nested arrays are not supported",
          [](GgufBytes& b) { b.put_u32(b.at("kv2.value"), 9); });
  patched("unknown_array_element_type", "unknown array element type 13",
          [](GgufBytes& b) { b.put_u32(b.at("kv2.value"), 13); });
  patched("unknown_value_type", "unknown value type 13",
          [](GgufBytes& b) { b.put_u32(b.at("kv5.type"), 13); });
  patched("unknown_value_type_max", "unknown value type 4294967295",
          [](GgufBytes& b) { b.put_u32(b.at("kv5.type"), 0xFFFFFFFFu); });

  // general.alignment.
  from_spec("alignment_48", "not a power of two", [](FileSpec& s) { s.kvs[1].value = v_u32(48); });
  from_spec("alignment_0", "not a power of two", [](FileSpec& s) { s.kvs[1].value = v_u32(0); });
  from_spec("alignment_uint64", "general.alignment has type UINT64, expected UINT32",
            [](FileSpec& s) { s.kvs[1].value = v_u64(32); });
  from_spec("alignment_string", "general.alignment has type STRING",
            [](FileSpec& s) { s.kvs[1].value = v_string("32"); });

  // Tensor infos.
  from_spec("name_64_bytes", "name length 64 exceeds 63",
            [](FileSpec& s) { s.tensors[1].name = std::string(64, 'n'); });
  from_spec("name_empty", "empty name", [](FileSpec& s) { s.tensors[2].name = ""; });
  from_spec("name_duplicate", "duplicate tensor name 'a'",
            [](FileSpec& s) { s.tensors[2].name = "a"; });
  from_spec("name_duplicate_nul", "duplicate tensor name 'b\\x00c'", [](FileSpec& s) {
    s.tensors[1].name = std::string("b\0c", 3);
    s.tensors[2].name = std::string("b\0c", 3);
  });
  patched("name_length_huge", "tensor #1 name length",
          [&](GgufBytes& b) { b.put_u64(b.at("ti1"), kHuge); });
  patched("n_dims_5", "n_dims 5", [](GgufBytes& b) { b.put_u32(b.at("ti0.n_dims"), 5); });
  patched("n_dims_0", "n_dims 0", [](GgufBytes& b) { b.put_u32(b.at("ti0.n_dims"), 0); });
  patched("n_dims_huge", "n_dims 4294967295",
          [](GgufBytes& b) { b.put_u32(b.at("ti0.n_dims"), 0xFFFFFFFFu); });
  patched("dim_zero", "dimension 1 is 0", [](GgufBytes& b) { b.put_u64(b.at("ti0.dim1"), 0); });
  patched("dim_above_int64", "overflows",
          [&](GgufBytes& b) { b.put_u64(b.at("ti0.dim0"), kHuge); });
  from_spec("elements_overflow", "element count overflows", [](FileSpec& s) {
    s.tensors[0].dims = {uint64_t{1} << 32, uint64_t{1} << 32};
  });
  from_spec("bytes_overflow", "byte size overflows", [](FileSpec& s) {
    s.tensors[0].dims = {uint64_t{1} << 31, uint64_t{1} << 31};  // 2^62 F32 values
  });
  for (uint32_t id : {4u, 5u, 31u, 33u, 36u, 38u, 43u, 0xFFFFFFFFu}) {
    patched("type_id_" + std::to_string(id),
            "unknown or removed ggml type id " + std::to_string(id),
            [id](GgufBytes& b) { b.put_u32(b.at("ti1.type"), id); });
  }
  patched("row_not_block_multiple", "not a multiple of the Q8_0 block size 32",
          [](GgufBytes& b) { b.put_u64(b.at("ti1.dim0"), 16); });

  // Tensor placement.
  patched("offset_unaligned", "is not a multiple of the alignment 32",
          [](GgufBytes& b) { b.put_u64(b.at("ti1.offset"), 65); });
  patched("offset_overlap", "overlaps tensor 'a'",
          [](GgufBytes& b) { b.put_u64(b.at("ti1.offset"), 32); });
  patched("offset_same", "overlaps",
          [](GgufBytes& b) { b.put_u64(b.at("ti2.offset"), b.get_u64(b.at("ti1.offset"))); });
  patched("offset_past_end", "run past end of file",
          [](GgufBytes& b) { b.put_u64(b.at("ti2.offset"), uint64_t{1} << 40); });
  patched("offset_wraps", "run past end of file",
          [&](GgufBytes& b) { b.put_u64(b.at("ti2.offset"), kHuge & ~uint64_t{31}); });
  patched("data_one_byte_short", "run past end of file", [](GgufBytes& b) { b.data.pop_back(); });
  patched("dims_grow_past_end", "run past end of file",
          [](GgufBytes& b) { b.put_u64(b.at("ti2.dim0"), 512); });
  return cases;
}

}  // namespace decodebench::testing
