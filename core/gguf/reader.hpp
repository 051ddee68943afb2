// GGUF v2/v3 reader over a read-only memory mapping (format: gguf-facts.md §1).
// Everything is validated in the constructor, before any use; tensors are views into the mapping.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace decodebench::gguf {

/// Format constants shared by the reader and the writer (gguf-facts.md §1).
inline constexpr char kMagic[4] = {'G', 'G', 'U', 'F'};  ///< file bytes 0..3
inline constexpr uint32_t kWriteVersion = 3;             ///< the version the writer emits
inline constexpr uint64_t kDefaultAlignment = 32;        ///< without general.alignment
inline constexpr uint64_t kMaxTensorName = 63;  ///< bytes; ggml keeps names in char[64] with a NUL
inline constexpr uint32_t kMaxDims = 4;         ///< dims per tensor (GGML_MAX_DIMS)
/// general.quantization_version for files holding quantized tensors (GGML_QNT_VERSION).
inline constexpr uint32_t kQuantizationVersion = 2;

/// Metadata value type ids (gguf-facts.md §1.2).
enum class ValueType : uint32_t {
  kUint8 = 0,
  kInt8 = 1,
  kUint16 = 2,
  kInt16 = 3,
  kUint32 = 4,
  kInt32 = 5,
  kFloat32 = 6,
  kBool = 7,
  kString = 8,
  kArray = 9,
  kUint64 = 10,
  kInt64 = 11,
  kFloat64 = 12,
};

/// "UINT32", "STRING", ...
const char* value_type_name(ValueType t);

/// True for the eight integer value types.
bool is_integer(ValueType t);
/// True for INT8, INT16, INT32, INT64.
bool is_signed(ValueType t);
/// True for FLOAT32 and FLOAT64.
bool is_float(ValueType t);

/// One metadata value. Scalars are widened: unsigned → `u`, signed → `i`, floats → `f`.
/// Arrays hold their elements (arrays of arrays are refused, as ggml does).
struct Value {
  ValueType type = ValueType::kUint8;
  ValueType elem_type = ValueType::kUint8;  ///< for arrays
  uint64_t u = 0;
  int64_t i = 0;
  double f = 0.0;
  bool b = false;
  std::string s;
  std::vector<Value> array;
};

/// A metadata key/value record and the file offset where it starts.
struct KeyValue {
  std::string key;
  Value value;
  uint64_t offset = 0;
};

/// A tensor-info record. dims[0] is the innermost (contiguous) axis; missing dims are 1.
struct TensorInfo {
  std::string name;
  uint32_t n_dims = 0;
  int64_t dims[4] = {1, 1, 1, 1};
  uint32_t type_id = 0;      ///< ggml type id (any known id; support is checked by the loader)
  uint64_t offset = 0;       ///< relative to the data section
  uint64_t file_offset = 0;  ///< absolute position of the tensor's bytes in the file
  uint64_t bytes = 0;        ///< byte size from dims and the type's block geometry
  uint64_t info_offset = 0;  ///< file offset of this tensor-info record (for error messages)

  [[nodiscard]] int64_t elements() const { return dims[0] * dims[1] * dims[2] * dims[3]; }
};

/// Name of any ggml type id known to the reader ("Q4_K", "IQ2_XXS", ...), or "type#N".
std::string ggml_type_name(uint32_t type_id);

/// Block geometry of a ggml tensor type: `block_elems` consecutive values of dims[0] are stored in
/// `block_bytes` bytes (gguf-facts.md §2.2, §2.4).
struct GgmlTypeTraits {
  const char* name;      ///< GGUF/ggml spelling: "F32", "Q4_K", "IQ2_XXS", ...
  uint32_t block_elems;  ///< values per block (1 for plain types)
  uint32_t block_bytes;  ///< bytes per block
};

/// Geometry of every ggml type id the reader knows (0..42 without the removed ids 4, 5, 31-33,
/// 36-38), or nullptr for an unknown or removed id. Q8_1 uses ggml's 36-byte block.
const GgmlTypeTraits* ggml_type_traits(uint32_t type_id);

/// Upper bound on the total number of metadata array elements in one file. Each element becomes
/// a `Value` (~100 bytes), so this caps the memory a file can make the reader allocate
/// (real vocabularies hold ~1.5M elements in all).
inline constexpr uint64_t kMaxMetadataArrayElements = uint64_t{1} << 24;

/// A validated, memory-mapped GGUF file.
///
/// Construction maps the file, parses header, metadata and tensor infos, and checks every rule of
/// gguf-facts.md §1 (counts and lengths within the file, n_dims <= 4, known type id, rows a
/// multiple of the block size, tensors inside the data section, aligned, in bounds, not
/// overlapping, unique names <= 63 bytes, big-endian files refused). Counts and lengths are bounded
/// by the bytes left in the file before anything is allocated, and metadata arrays are only
/// materialised once the whole file has been validated (at most kMaxMetadataArrayElements in all).
/// Throws decodebench::Error with ExitCode::kUsage naming the file offset and the rule
/// ("PATH: offset N: RULE"); a missing or non-regular file is kUsage too, a failed mmap or
/// exhausted memory kResources.
/// The mapping lives as long as the Reader (share it through std::shared_ptr to keep views alive).
class Reader {
 public:
  explicit Reader(const std::string& path);
  ~Reader();
  Reader(const Reader&) = delete;
  Reader& operator=(const Reader&) = delete;

  [[nodiscard]] const std::string& path() const { return path_; }
  [[nodiscard]] uint32_t version() const { return version_; }
  [[nodiscard]] uint64_t file_size() const { return size_; }
  [[nodiscard]] uint64_t alignment() const { return alignment_; }
  [[nodiscard]] uint64_t data_offset() const { return data_offset_; }

  [[nodiscard]] const std::vector<KeyValue>& metadata() const { return metadata_; }
  [[nodiscard]] const std::vector<TensorInfo>& tensors() const { return tensors_; }

  /// The record for `key`, or nullptr.
  [[nodiscard]] const KeyValue* find(std::string_view key) const;
  /// The tensor named `name`, or nullptr.
  [[nodiscard]] const TensorInfo* find_tensor(std::string_view name) const;
  /// Pointer to the first byte of a tensor's data inside the mapping.
  [[nodiscard]] const uint8_t* tensor_data(const TensorInfo& t) const;

  // Typed getters: std::nullopt when the key is absent; Error (exit 2) naming the key when it has
  // an incompatible type. Integer getters accept any integer width (and reject negatives for
  // get_uint); get_float accepts FLOAT32/FLOAT64 and integers.
  [[nodiscard]] std::optional<uint64_t> get_uint(std::string_view key) const;
  [[nodiscard]] std::optional<int64_t> get_int(std::string_view key) const;
  [[nodiscard]] std::optional<double> get_float(std::string_view key) const;
  [[nodiscard]] std::optional<bool> get_bool(std::string_view key) const;
  [[nodiscard]] std::optional<std::string> get_string(std::string_view key) const;
  /// Array getters return an empty vector when the key is absent.
  [[nodiscard]] std::vector<std::string> get_string_array(std::string_view key) const;
  [[nodiscard]] std::vector<double> get_float_array(std::string_view key) const;
  [[nodiscard]] std::vector<int64_t> get_int_array(std::string_view key) const;

 private:
  void parse();

  std::string path_;
  const uint8_t* base_ = nullptr;
  uint64_t size_ = 0;
  int fd_ = -1;
  uint32_t version_ = 0;
  uint64_t alignment_ = 32;
  uint64_t data_offset_ = 0;
  std::vector<KeyValue> metadata_;
  std::vector<TensorInfo> tensors_;
  std::map<std::string, size_t, std::less<>> tensor_index_;  ///< name -> index in tensors_
};

}  // namespace decodebench::gguf
