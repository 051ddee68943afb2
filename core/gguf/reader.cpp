// GGUF reader. Parsing runs in two passes over the mapping:
//   pass A walks header, metadata and tensor infos, checking every count and length against the
//          bytes that remain before reading or allocating anything sized by it; arrays are only
//          skipped over (bounded loops, no allocation);
//   pass B materialises the metadata arrays, once the whole file is known to be consistent.
// So a corrupt array count can never make the reader allocate more than the validated file
// implies, and every rule violation is reported with the file offset where it was found.
#include "core/gguf/reader.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <limits>
#include <new>
#include <unordered_set>

#include "core/error.hpp"
#include "core/gguf/printable.hpp"
#include "core/text.hpp"

namespace decodebench::gguf {

static_assert(std::endian::native == std::endian::little,
              "the GGUF reader decodes little-endian fields with memcpy");

namespace {

constexpr uint64_t kHeaderBytes = 24;     // magic, version, tensor_count, kv_count
constexpr uint64_t kMinKvBytes = 14;      // key length 8 + key >= 1 + type 4 + value >= 1
constexpr uint64_t kMinTensorBytes = 33;  // name length 8 + name >= 1 + n_dims 4 + dim 8 +
                                          // type 4 + offset 8
constexpr uint32_t kValueTypeCount = 13;

// Indexed by ggml type id; {nullptr, 0, 0} marks an unknown or removed id.
constexpr GgmlTypeTraits kGgmlTypes[] = {
    {"F32", 1, 4},         // 0
    {"F16", 1, 2},         // 1
    {"Q4_0", 32, 18},      // 2
    {"Q4_1", 32, 20},      // 3
    {nullptr, 0, 0},       // 4 removed (Q4_2)
    {nullptr, 0, 0},       // 5 removed (Q4_3)
    {"Q5_0", 32, 22},      // 6
    {"Q5_1", 32, 24},      // 7
    {"Q8_0", 32, 34},      // 8
    {"Q8_1", 32, 36},      // 9
    {"Q2_K", 256, 84},     // 10
    {"Q3_K", 256, 110},    // 11
    {"Q4_K", 256, 144},    // 12
    {"Q5_K", 256, 176},    // 13
    {"Q6_K", 256, 210},    // 14
    {"Q8_K", 256, 292},    // 15
    {"IQ2_XXS", 256, 66},  // 16
    {"IQ2_XS", 256, 74},   // 17
    {"IQ3_XXS", 256, 98},  // 18
    {"IQ1_S", 256, 50},    // 19
    {"IQ4_NL", 32, 18},    // 20
    {"IQ3_S", 256, 110},   // 21
    {"IQ2_S", 256, 82},    // 22
    {"IQ4_XS", 256, 136},  // 23
    {"I8", 1, 1},          // 24
    {"I16", 1, 2},         // 25
    {"I32", 1, 4},         // 26
    {"I64", 1, 8},         // 27
    {"F64", 1, 8},         // 28
    {"IQ1_M", 256, 56},    // 29
    {"BF16", 1, 2},        // 30
    {nullptr, 0, 0},       // 31 removed (Q4_0_4_4)
    {nullptr, 0, 0},       // 32 removed (Q4_0_4_8)
    {nullptr, 0, 0},       // 33 removed (Q4_0_8_8)
    {"TQ1_0", 256, 54},    // 34
    {"TQ2_0", 256, 66},    // 35
    {nullptr, 0, 0},       // 36 removed (IQ4_NL_4_4)
    {nullptr, 0, 0},       // 37 removed (IQ4_NL_4_8)
    {nullptr, 0, 0},       // 38 removed (IQ4_NL_8_8)
    {"MXFP4", 32, 17},     // 39
    {"NVFP4", 64, 36},     // 40
    {"Q1_0", 128, 18},     // 41
    {"Q2_0", 64, 18},      // 42
};

// Smallest encoding of one value of type t: strings need their length field, arrays their element
// type and count. Used to bound counts by the bytes that remain.
uint64_t min_value_bytes(ValueType t) {
  switch (t) {
    case ValueType::kUint8:
    case ValueType::kInt8:
    case ValueType::kBool:
      return 1;
    case ValueType::kUint16:
    case ValueType::kInt16:
      return 2;
    case ValueType::kUint32:
    case ValueType::kInt32:
    case ValueType::kFloat32:
      return 4;
    case ValueType::kString:
    case ValueType::kUint64:
    case ValueType::kInt64:
    case ValueType::kFloat64:
      return 8;
    case ValueType::kArray:
      return 12;
  }
  return 1;
}

std::string type_label(const Value& v) {
  if (v.type == ValueType::kArray) {
    return fmt::format("ARRAY[{}]", value_type_name(v.elem_type));
  }
  return value_type_name(v.type);
}

// Bounds-checked little-endian reader over the mapping. Every failure names the path, the offset
// and the rule.
class Cursor {
 public:
  Cursor(const std::string& path, const uint8_t* base, uint64_t size, uint64_t pos)
      : path_(path), base_(base), size_(size), pos_(pos) {}

  [[nodiscard]] uint64_t pos() const { return pos_; }
  [[nodiscard]] uint64_t remaining() const { return size_ - pos_; }
  [[nodiscard]] uint64_t size() const { return size_; }

  [[noreturn]] void fail(uint64_t offset, const std::string& rule) const {
    throw usage_error(fmt::format("{}: offset {}: {}", path_, offset, rule));
  }

  void need(uint64_t n, std::string_view what) const {
    if (n > remaining()) {
      fail(pos_, fmt::format("{} ({} bytes) runs past end of file (size {})", what, n, size_));
    }
  }

  template <typename T>
  T read(std::string_view what) {
    need(sizeof(T), what);
    T v;
    std::memcpy(&v, base_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }

  void skip(uint64_t n, std::string_view what) {
    need(n, what);
    pos_ += n;
  }

  // A GGUF string: u64 length, then that many bytes. The view points into the mapping.
  std::string_view string(std::string_view what) {
    const uint64_t at = pos_;
    const uint64_t len = read<uint64_t>(fmt::format("{} length", what));
    if (len > remaining()) {
      fail(at, fmt::format("{} length {} runs past end of file (size {})", what, len, size_));
    }
    std::string_view s(reinterpret_cast<const char*>(base_ + pos_), len);
    pos_ += len;
    return s;
  }

 private:
  const std::string& path_;
  const uint8_t* base_;
  uint64_t size_;
  uint64_t pos_;
};

// A string from the file as messages show it: control bytes, quotes and invalid UTF-8 escaped (a
// NUL would cut the message short, a newline add a line of the file's own), at most
// kMessageStringBytes.
std::string shown(std::string_view s) { return escape_text(s, kMessageStringBytes); }

// Reads (out != nullptr) or skips (out == nullptr) one value of type `type` at the cursor.
// `key` only serves error messages, escaped by the caller (shown()); `array_elements`
// accumulates the element count of arrays.
void read_value(Cursor& c, ValueType type, std::string_view key, Value* out,
                uint64_t* array_elements) {
  const auto what = [&](std::string_view part) {
    return fmt::format("metadata key '{}' {}", key, part);
  };
  if (out != nullptr) out->type = type;
  switch (type) {
    case ValueType::kUint8: {
      const auto v = c.read<uint8_t>(what("UINT8 value"));
      if (out != nullptr) out->u = v;
      return;
    }
    case ValueType::kInt8: {
      const auto v = c.read<int8_t>(what("INT8 value"));
      if (out != nullptr) out->i = v;
      return;
    }
    case ValueType::kUint16: {
      const auto v = c.read<uint16_t>(what("UINT16 value"));
      if (out != nullptr) out->u = v;
      return;
    }
    case ValueType::kInt16: {
      const auto v = c.read<int16_t>(what("INT16 value"));
      if (out != nullptr) out->i = v;
      return;
    }
    case ValueType::kUint32: {
      const auto v = c.read<uint32_t>(what("UINT32 value"));
      if (out != nullptr) out->u = v;
      return;
    }
    case ValueType::kInt32: {
      const auto v = c.read<int32_t>(what("INT32 value"));
      if (out != nullptr) out->i = v;
      return;
    }
    case ValueType::kUint64: {
      const auto v = c.read<uint64_t>(what("UINT64 value"));
      if (out != nullptr) out->u = v;
      return;
    }
    case ValueType::kInt64: {
      const auto v = c.read<int64_t>(what("INT64 value"));
      if (out != nullptr) out->i = v;
      return;
    }
    case ValueType::kFloat32: {
      const auto v = c.read<float>(what("FLOAT32 value"));
      if (out != nullptr) out->f = v;
      return;
    }
    case ValueType::kFloat64: {
      const auto v = c.read<double>(what("FLOAT64 value"));
      if (out != nullptr) out->f = v;
      return;
    }
    case ValueType::kBool: {
      // ggml treats any non-zero byte as true; so do we.
      const auto v = c.read<uint8_t>(what("BOOL value"));
      if (out != nullptr) out->b = v != 0;
      return;
    }
    case ValueType::kString: {
      const std::string_view s = c.string(what("string"));
      if (out != nullptr) out->s.assign(s);
      return;
    }
    case ValueType::kArray: {
      const uint64_t type_at = c.pos();
      const auto elem_raw = c.read<uint32_t>(what("array element type"));
      if (elem_raw >= kValueTypeCount) {
        c.fail(type_at,
               fmt::format("metadata key '{}': unknown array element type {}", key, elem_raw));
      }
      const auto elem = static_cast<ValueType>(elem_raw);
      if (elem == ValueType::kArray) {
        c.fail(type_at, fmt::format("metadata key '{}': nested arrays are not supported", key));
      }
      const uint64_t count_at = c.pos();
      const auto count = c.read<uint64_t>(what("array count"));
      const uint64_t min_bytes = min_value_bytes(elem);
      if (count > c.remaining() / min_bytes) {
        c.fail(count_at,
               fmt::format("metadata key '{}': array count {} of {} runs past end of file "
                           "(at least {} bytes each, {} bytes remain, size {})",
                           key, count, value_type_name(elem), min_bytes, c.remaining(), c.size()));
      }
      if (array_elements != nullptr) {
        *array_elements += count;
        if (*array_elements > kMaxMetadataArrayElements) {
          c.fail(count_at, fmt::format("metadata key '{}': metadata arrays hold more than {} "
                                       "elements in all (reader limit)",
                                       key, kMaxMetadataArrayElements));
        }
      }
      if (out == nullptr) {
        if (elem == ValueType::kString) {
          // Bounded: count <= remaining / 8 and each string advances the cursor by >= 8.
          for (uint64_t k = 0; k < count; ++k) c.string(what("array string"));
        } else {
          c.skip(count * min_bytes, what("array data"));
        }
        return;
      }
      out->elem_type = elem;
      out->array.clear();
      out->array.reserve(count);
      for (uint64_t k = 0; k < count; ++k) {
        out->array.emplace_back();
        read_value(c, elem, key, &out->array.back(), nullptr);
      }
      return;
    }
  }
}

std::string errno_text() { return std::strerror(errno); }

}  // namespace

const char* value_type_name(ValueType t) {
  switch (t) {
    case ValueType::kUint8:
      return "UINT8";
    case ValueType::kInt8:
      return "INT8";
    case ValueType::kUint16:
      return "UINT16";
    case ValueType::kInt16:
      return "INT16";
    case ValueType::kUint32:
      return "UINT32";
    case ValueType::kInt32:
      return "INT32";
    case ValueType::kFloat32:
      return "FLOAT32";
    case ValueType::kBool:
      return "BOOL";
    case ValueType::kString:
      return "STRING";
    case ValueType::kArray:
      return "ARRAY";
    case ValueType::kUint64:
      return "UINT64";
    case ValueType::kInt64:
      return "INT64";
    case ValueType::kFloat64:
      return "FLOAT64";
  }
  return "UNKNOWN";
}

const GgmlTypeTraits* ggml_type_traits(uint32_t type_id) {
  if (type_id >= std::size(kGgmlTypes)) return nullptr;
  const GgmlTypeTraits& t = kGgmlTypes[type_id];
  return t.name == nullptr ? nullptr : &t;
}

std::string ggml_type_name(uint32_t type_id) {
  const GgmlTypeTraits* t = ggml_type_traits(type_id);
  return t != nullptr ? std::string(t->name) : fmt::format("type#{}", type_id);
}

Reader::Reader(const std::string& path) : path_(path) {
  // O_NONBLOCK: opening a FIFO must not hang; non-regular files are refused right after.
  fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd_ < 0) throw usage_error(fmt::format("{}: cannot open: {}", echo_path(path), errno_text()));
  struct stat st {};
  if (::fstat(fd_, &st) != 0) {
    const std::string why = errno_text();
    ::close(fd_);
    fd_ = -1;
    throw usage_error(fmt::format("{}: cannot stat: {}", path, why));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd_);
    fd_ = -1;
    throw usage_error(fmt::format("{}: not a regular file", path));
  }
  size_ = static_cast<uint64_t>(st.st_size);
  if (size_ > 0) {
    void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd_, 0);
    if (p == MAP_FAILED) {
      const std::string why = errno_text();
      ::close(fd_);
      fd_ = -1;
      throw resource_error(fmt::format("{}: cannot map {} bytes: {}", path, size_, why));
    }
    base_ = static_cast<const uint8_t*>(p);
  }
  // The mapping keeps the file's pages; the descriptor is no longer needed.
  ::close(fd_);
  fd_ = -1;
  try {
    parse();
  } catch (const std::bad_alloc&) {
    if (base_ != nullptr) ::munmap(const_cast<uint8_t*>(base_), size_);
    throw resource_error(fmt::format("{}: out of memory while reading the metadata", path));
  } catch (...) {
    if (base_ != nullptr) ::munmap(const_cast<uint8_t*>(base_), size_);
    throw;
  }
}

Reader::~Reader() {
  if (base_ != nullptr) ::munmap(const_cast<uint8_t*>(base_), size_);
  if (fd_ >= 0) ::close(fd_);
}

void Reader::parse() {
  Cursor c(path_, base_, size_, 0);

  // ---- Header -----------------------------------------------------------------------------
  if (size_ < 4) {
    c.fail(0, fmt::format("file is {} bytes, too short for the GGUF magic", size_));
  }
  if (std::memcmp(base_, kMagic, sizeof kMagic) != 0) {
    c.fail(0, fmt::format("bad magic {:02x} {:02x} {:02x} {:02x} (expected 47 47 55 46 \"GGUF\")",
                          base_[0], base_[1], base_[2], base_[3]));
  }
  c.skip(4, "magic");
  const uint64_t version_at = c.pos();
  version_ = c.read<uint32_t>("version");
  if (version_ == 0) c.fail(version_at, "GGUF version 0 is not supported");
  // No endianness flag exists: a byte-swapped small version has its low 16 bits zero.
  if ((version_ & 0xFFFFu) == 0) {
    c.fail(version_at,
           fmt::format("big-endian GGUF files are not supported (version reads as 0x{:08x})",
                       version_));
  }
  if (version_ == 1) c.fail(version_at, "GGUFv1 is not supported (only versions 2 and 3)");
  if (version_ > 3) {
    c.fail(version_at,
           fmt::format("GGUF version {} is not supported (only versions 2 and 3)", version_));
  }
  const uint64_t tensor_count_at = c.pos();
  const auto tensor_count = c.read<uint64_t>("tensor count");
  const uint64_t kv_count_at = c.pos();
  const auto kv_count = c.read<uint64_t>("metadata key/value count");
  const uint64_t after_header = c.remaining();
  if (kv_count > after_header / kMinKvBytes) {
    c.fail(kv_count_at, fmt::format("metadata key/value count {} runs past end of file (at least "
                                    "{} bytes each, {} bytes follow the header, size {})",
                                    kv_count, kMinKvBytes, after_header, size_));
  }
  if (tensor_count > after_header / kMinTensorBytes ||
      kv_count * kMinKvBytes + tensor_count * kMinTensorBytes > after_header) {
    c.fail(tensor_count_at,
           fmt::format("tensor count {} runs past end of file (at least {} bytes per tensor info "
                       "after {} metadata records, {} bytes follow the header, size {})",
                       tensor_count, kMinTensorBytes, kv_count, after_header, size_));
  }

  // ---- Metadata, pass A: validate and skip arrays ------------------------------------------
  struct DeferredArray {
    size_t index;
    uint64_t value_at;
  };
  std::vector<DeferredArray> deferred;
  std::unordered_set<std::string_view> keys;
  uint64_t array_elements = 0;
  // Counts are only bounded by the file size, so reserve little and let the vectors grow.
  metadata_.reserve(std::min<uint64_t>(kv_count, 1u << 12));
  for (uint64_t k = 0; k < kv_count; ++k) {
    KeyValue kv;
    kv.offset = c.pos();
    const std::string_view key = c.string("metadata key");
    if (key.empty()) c.fail(kv.offset, fmt::format("metadata key #{} is empty", k));
    if (!keys.insert(key).second) {
      c.fail(kv.offset, fmt::format("duplicate metadata key '{}'", shown(key)));
    }
    kv.key.assign(key);
    const std::string sk = shown(key);  // for messages: the file's bytes escaped
    const uint64_t type_at = c.pos();
    const auto type_raw = c.read<uint32_t>(fmt::format("metadata key '{}' value type", sk));
    if (type_raw >= kValueTypeCount) {
      c.fail(type_at, fmt::format("metadata key '{}': unknown value type {}", sk, type_raw));
    }
    const auto type = static_cast<ValueType>(type_raw);
    if (type == ValueType::kArray) {
      const uint64_t value_at = c.pos();
      read_value(c, type, sk, nullptr, &array_elements);
      deferred.push_back({metadata_.size(), value_at});
      uint32_t elem_raw = 0;  // validated by read_value
      std::memcpy(&elem_raw, base_ + value_at, sizeof(elem_raw));
      kv.value.type = type;
      kv.value.elem_type = static_cast<ValueType>(elem_raw);
    } else {
      read_value(c, type, sk, &kv.value, nullptr);
    }
    metadata_.push_back(std::move(kv));
  }

  // ---- Alignment ----------------------------------------------------------------------------
  alignment_ = kDefaultAlignment;
  if (const KeyValue* a = find("general.alignment")) {
    if (a->value.type != ValueType::kUint32) {
      c.fail(a->offset,
             fmt::format("general.alignment has type {}, expected UINT32", type_label(a->value)));
    }
    if (a->value.u == 0 || !std::has_single_bit(a->value.u)) {
      c.fail(a->offset, fmt::format("general.alignment {} is not a power of two", a->value.u));
    }
    alignment_ = a->value.u;
  }

  // ---- Tensor infos -------------------------------------------------------------------------
  std::unordered_set<std::string_view> names;
  tensors_.reserve(std::min<uint64_t>(tensor_count, 1u << 16));
  for (uint64_t k = 0; k < tensor_count; ++k) {
    TensorInfo t;
    t.info_offset = c.pos();
    const std::string_view name = c.string(fmt::format("tensor #{} name", k));
    if (name.empty()) c.fail(t.info_offset, fmt::format("tensor #{} has an empty name", k));
    if (name.size() > kMaxTensorName) {
      c.fail(t.info_offset, fmt::format("tensor #{} name length {} exceeds {} bytes", k,
                                        name.size(), kMaxTensorName));
    }
    if (!names.insert(name).second) {
      c.fail(t.info_offset, fmt::format("duplicate tensor name '{}'", shown(name)));
    }
    t.name.assign(name);
    const std::string tn = shown(name);  // for messages: the file's bytes escaped
    const uint64_t n_dims_at = c.pos();
    t.n_dims = c.read<uint32_t>(fmt::format("tensor '{}' n_dims", tn));
    if (t.n_dims < 1 || t.n_dims > kMaxDims) {
      c.fail(n_dims_at,
             fmt::format("tensor '{}': n_dims {} is outside 1..{}", tn, t.n_dims, kMaxDims));
    }
    int64_t elements = 1;
    for (uint32_t d = 0; d < t.n_dims; ++d) {
      const uint64_t dim_at = c.pos();
      const auto dim = c.read<uint64_t>(fmt::format("tensor '{}' dimension {}", tn, d));
      if (dim == 0) c.fail(dim_at, fmt::format("tensor '{}': dimension {} is 0", tn, d));
      if (dim > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) ||
          __builtin_mul_overflow(elements, static_cast<int64_t>(dim), &elements)) {
        c.fail(dim_at, fmt::format("tensor '{}': element count overflows int64 at dimension {} "
                                   "({})",
                                   tn, d, dim));
      }
      t.dims[d] = static_cast<int64_t>(dim);
    }
    const uint64_t type_at = c.pos();
    t.type_id = c.read<uint32_t>(fmt::format("tensor '{}' type", tn));
    const GgmlTypeTraits* traits = ggml_type_traits(t.type_id);
    if (traits == nullptr) {
      c.fail(type_at,
             fmt::format("tensor '{}': unknown or removed ggml type id {}", tn, t.type_id));
    }
    if (t.dims[0] % traits->block_elems != 0) {
      c.fail(type_at, fmt::format("tensor '{}': dimension 0 ({}) is not a multiple of the {} "
                                  "block size {}",
                                  tn, t.dims[0], traits->name, traits->block_elems));
    }
    // bytes = dims[0] / block_elems * block_bytes * dims[1] * dims[2] * dims[3]
    uint64_t bytes = static_cast<uint64_t>(t.dims[0]) / traits->block_elems;
    bool overflow = __builtin_mul_overflow(bytes, uint64_t{traits->block_bytes}, &bytes);
    for (int d = 1; d < 4; ++d) {
      overflow =
          overflow || __builtin_mul_overflow(bytes, static_cast<uint64_t>(t.dims[d]), &bytes);
    }
    if (overflow) {
      c.fail(type_at, fmt::format("tensor '{}': byte size overflows 64 bits", tn));
    }
    t.bytes = bytes;
    const uint64_t offset_at = c.pos();
    t.offset = c.read<uint64_t>(fmt::format("tensor '{}' offset", tn));
    if (t.offset % alignment_ != 0) {
      c.fail(offset_at, fmt::format("tensor '{}': data offset {} is not a multiple of the "
                                    "alignment {}",
                                    tn, t.offset, alignment_));
    }
    tensors_.push_back(std::move(t));
  }

  // ---- Data section -------------------------------------------------------------------------
  const uint64_t infos_end = c.pos();
  data_offset_ = infos_end + (alignment_ - infos_end % alignment_) % alignment_;
  // Writers pad with zeros up to the data section (gguf-facts §1.4). Other bytes there are most
  // likely the next tensor's info: a header whose tensor count is too low would otherwise read
  // every tensor's data from the wrong place, without a word.
  if (!tensors_.empty()) {
    for (uint64_t p = infos_end; p < std::min(data_offset_, size_); ++p) {
      if (base_[p] != 0) {
        c.fail(p, fmt::format("byte 0x{:02x} in the padding before the data section (at {}; "
                              "GGUF pads with zeros): the header's tensor count ({}) is likely "
                              "lower than the tensors the file describes",
                              base_[p], data_offset_, tensors_.size()));
      }
    }
  }
  for (TensorInfo& t : tensors_) {
    // Overflow-safe form of data_offset + offset + bytes <= size.
    if (data_offset_ > size_ || t.offset > size_ - data_offset_ ||
        t.bytes > size_ - data_offset_ - t.offset) {
      c.fail(t.info_offset,
             fmt::format("tensor '{}': {} bytes at data section {} + tensor offset {} run past "
                         "end of file (size {})",
                         shown(t.name), t.bytes, data_offset_, t.offset, size_));
    }
    t.file_offset = data_offset_ + t.offset;
  }
  std::vector<size_t> order(tensors_.size());
  for (size_t k = 0; k < order.size(); ++k) order[k] = k;
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return tensors_[a].offset < tensors_[b].offset; });
  for (size_t k = 1; k < order.size(); ++k) {
    const TensorInfo& prev = tensors_[order[k - 1]];
    const TensorInfo& cur = tensors_[order[k]];
    if (prev.offset + prev.bytes > cur.offset) {
      c.fail(cur.info_offset,
             fmt::format("tensor '{}' data [{}, {}) overlaps tensor '{}' data [{}, {})",
                         shown(cur.name), cur.file_offset, cur.file_offset + cur.bytes,
                         shown(prev.name), prev.file_offset, prev.file_offset + prev.bytes));
    }
  }
  // Writers end the file with the last tensor's data and its zero padding. Non-zero bytes past
  // that are most likely a tensor the header does not count (the padding check above misses a
  // shortened info list that happens to end on the alignment); trailing zeros are let be.
  if (!tensors_.empty()) {
    uint64_t end = 0;
    for (const TensorInfo& t : tensors_) end = std::max(end, t.offset + t.bytes);
    for (uint64_t p = data_offset_ + end; p < size_; ++p) {
      if (base_[p] != 0) {
        c.fail(p, fmt::format("byte 0x{:02x} after the last tensor's data (which ends at {}): "
                              "the header's tensor count ({}) is likely lower than the tensors "
                              "the file holds",
                              base_[p], data_offset_ + end, tensors_.size()));
      }
    }
  }
  for (size_t k = 0; k < tensors_.size(); ++k) tensor_index_.emplace(tensors_[k].name, k);

  // ---- Metadata, pass B: materialise arrays (the file is consistent by now) ----------------
  for (const DeferredArray& d : deferred) {
    KeyValue& kv = metadata_[d.index];
    Cursor ac(path_, base_, size_, d.value_at);
    read_value(ac, ValueType::kArray, shown(kv.key), &kv.value, nullptr);
  }
}

const KeyValue* Reader::find(std::string_view key) const {
  for (const KeyValue& kv : metadata_) {
    if (kv.key == key) return &kv;
  }
  return nullptr;
}

const TensorInfo* Reader::find_tensor(std::string_view name) const {
  const auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

const uint8_t* Reader::tensor_data(const TensorInfo& t) const { return base_ + t.file_offset; }

namespace {

[[noreturn]] void wrong_type(const std::string& path, const KeyValue& kv,
                             std::string_view expected) {
  throw usage_error(fmt::format("{}: offset {}: metadata key '{}' has type {}, expected {}", path,
                                kv.offset, kv.key, type_label(kv.value), expected));
}

// Integer value of a scalar as int64 (unsigned values above INT64_MAX are refused).
int64_t as_int(const std::string& path, const KeyValue& kv, const Value& v) {
  if (is_signed(v.type)) return v.i;
  if (v.u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    throw usage_error(fmt::format("{}: offset {}: metadata key '{}' value {} does not fit int64",
                                  path, kv.offset, kv.key, v.u));
  }
  return static_cast<int64_t>(v.u);
}

double as_double(const Value& v) {
  if (is_float(v.type)) return v.f;
  return is_signed(v.type) ? static_cast<double>(v.i) : static_cast<double>(v.u);
}

}  // namespace

std::optional<uint64_t> Reader::get_uint(std::string_view key) const {
  const KeyValue* kv = find(key);
  if (kv == nullptr) return std::nullopt;
  if (!is_integer(kv->value.type)) wrong_type(path_, *kv, "an unsigned integer");
  if (is_signed(kv->value.type)) {
    if (kv->value.i < 0) {
      throw usage_error(fmt::format("{}: offset {}: metadata key '{}' is negative ({})", path_,
                                    kv->offset, kv->key, kv->value.i));
    }
    return static_cast<uint64_t>(kv->value.i);
  }
  return kv->value.u;
}

std::optional<int64_t> Reader::get_int(std::string_view key) const {
  const KeyValue* kv = find(key);
  if (kv == nullptr) return std::nullopt;
  if (!is_integer(kv->value.type)) wrong_type(path_, *kv, "an integer");
  return as_int(path_, *kv, kv->value);
}

std::optional<double> Reader::get_float(std::string_view key) const {
  const KeyValue* kv = find(key);
  if (kv == nullptr) return std::nullopt;
  if (!is_float(kv->value.type) && !is_integer(kv->value.type)) {
    wrong_type(path_, *kv, "FLOAT32, FLOAT64 or an integer");
  }
  return as_double(kv->value);
}

std::optional<bool> Reader::get_bool(std::string_view key) const {
  const KeyValue* kv = find(key);
  if (kv == nullptr) return std::nullopt;
  if (kv->value.type != ValueType::kBool) wrong_type(path_, *kv, "BOOL");
  return kv->value.b;
}

std::optional<std::string> Reader::get_string(std::string_view key) const {
  const KeyValue* kv = find(key);
  if (kv == nullptr) return std::nullopt;
  if (kv->value.type != ValueType::kString) wrong_type(path_, *kv, "STRING");
  return kv->value.s;
}

std::vector<std::string> Reader::get_string_array(std::string_view key) const {
  const KeyValue* kv = find(key);
  if (kv == nullptr) return {};
  if (kv->value.type != ValueType::kArray || kv->value.elem_type != ValueType::kString) {
    wrong_type(path_, *kv, "ARRAY[STRING]");
  }
  std::vector<std::string> out;
  out.reserve(kv->value.array.size());
  for (const Value& v : kv->value.array) out.push_back(v.s);
  return out;
}

std::vector<double> Reader::get_float_array(std::string_view key) const {
  const KeyValue* kv = find(key);
  if (kv == nullptr) return {};
  const ValueType e = kv->value.elem_type;
  if (kv->value.type != ValueType::kArray || !(is_float(e) || is_integer(e))) {
    wrong_type(path_, *kv, "an ARRAY of floats or integers");
  }
  std::vector<double> out;
  out.reserve(kv->value.array.size());
  for (const Value& v : kv->value.array) out.push_back(as_double(v));
  return out;
}

std::vector<int64_t> Reader::get_int_array(std::string_view key) const {
  const KeyValue* kv = find(key);
  if (kv == nullptr) return {};
  if (kv->value.type != ValueType::kArray || !is_integer(kv->value.elem_type)) {
    wrong_type(path_, *kv, "an ARRAY of integers");
  }
  std::vector<int64_t> out;
  out.reserve(kv->value.array.size());
  for (const Value& v : kv->value.array) out.push_back(as_int(path_, *kv, v));
  return out;
}

bool is_integer(ValueType t) {
  switch (t) {
    case ValueType::kUint8:
    case ValueType::kInt8:
    case ValueType::kUint16:
    case ValueType::kInt16:
    case ValueType::kUint32:
    case ValueType::kInt32:
    case ValueType::kUint64:
    case ValueType::kInt64:
      return true;
    default:
      return false;
  }
}

bool is_signed(ValueType t) {
  return t == ValueType::kInt8 || t == ValueType::kInt16 || t == ValueType::kInt32 ||
         t == ValueType::kInt64;
}

bool is_float(ValueType t) { return t == ValueType::kFloat32 || t == ValueType::kFloat64; }

}  // namespace decodebench::gguf
