// GGUF v3 writer (little-endian, gguf-facts.md §1): metadata key/values, tensor infos, aligned
// tensor data streamed from the caller, written to a temporary file and renamed into place.
#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace decodebench::gguf {

/// Where a tensor's bytes go: the writer hands one to each tensor's source callback.
class TensorSink {
 public:
  /// Appends `bytes` bytes at `data`. Throws decodebench::Error when the file cannot be written
  /// (exit 3 when the disk is full, else exit 1).
  void write(const void* data, uint64_t bytes);
  [[nodiscard]] uint64_t written() const { return written_; }

 private:
  friend class Writer;
  TensorSink(std::FILE* file, std::string path) : file_(file), path_(std::move(path)) {}
  std::FILE* file_;
  std::string path_;
  uint64_t written_ = 0;
};

/// Builds a GGUF file in memory order and writes it in one pass. Metadata is encoded as it is
/// added (so a vocabulary of 150k strings costs its encoded bytes, not one object per string);
/// tensor bytes are not held: each tensor's `source` writes them when write() reaches it, so a
/// model is written straight from where it lives. Layout: header (magic, version 3, counts), the
/// key/values in the order added, the tensor infos in the order added, zero padding up to the
/// alignment, then each tensor padded with zeros to a multiple of the alignment (offsets as ggml's
/// reader requires: offset_i = Σ_{j<i} align(bytes_j)).
class Writer {
 public:
  /// `alignment`: data alignment in bytes (a power of two); anything but 32 is also recorded as
  /// general.alignment. Throws decodebench::Error (exit 2) for a bad alignment.
  explicit Writer(uint32_t alignment = 32);

  // Metadata. Each key may be added once; a duplicate or empty key throws decodebench::Error
  // (exit 2 naming the key). Integer widths follow gguf-facts.md §3 (llama.cpp checks them).
  void add_uint32(const std::string& key, uint32_t value);
  void add_uint64(const std::string& key, uint64_t value);
  void add_int32(const std::string& key, int32_t value);
  void add_float32(const std::string& key, float value);
  void add_bool(const std::string& key, bool value);
  void add_string(const std::string& key, const std::string& value);
  void add_string_array(const std::string& key, const std::vector<std::string>& values);
  void add_int32_array(const std::string& key, const std::vector<int32_t>& values);
  void add_float32_array(const std::string& key, const std::vector<float>& values);

  /// Writes a tensor's bytes into the sink; must write exactly the tensor's byte size.
  using Source = std::function<void(TensorSink&)>;

  /// Adds a tensor: `dims` in GGUF order (dims[0] = ne0, the contiguous axis; 1 to 4 dims, each
  /// ≥ 1), ggml `type_id` (any type the reader knows), and the callback that writes its
  /// bytes (size from dims and the type's block geometry). Throws decodebench::Error (exit 2) for a
  /// name that is empty, longer than 63 bytes or already used, bad dims, an unknown type, or
  /// dims[0] not a multiple of the type's block size.
  void add_tensor(const std::string& name, const std::vector<int64_t>& dims, uint32_t type_id,
                  Source source);

  /// Byte size of the file write() will produce.
  [[nodiscard]] uint64_t file_bytes() const;

  /// Writes the file to a temporary file next to `path` and renames it over `path` (atomic on
  /// POSIX), so `path` is either untouched or complete; the temporary file is removed on failure
  /// (OutputFile: a link is followed to its target, a device or FIFO written in place).
  /// Throws decodebench::Error: exit 2 when the folder does not exist or is not writable (`flag`
  /// names the option in the message), exit 3 when the disk is full, exit 1 for other write
  /// errors or a source that writes the wrong number of bytes.
  void write(const std::string& path, const std::string& flag = "--out") const;

 private:
  struct TensorEntry {
    std::string name;
    std::vector<int64_t> dims;
    uint32_t type_id;
    uint64_t bytes;
    Source source;
  };
  void begin_key(const std::string& key, uint32_t value_type);
  [[nodiscard]] uint64_t align(uint64_t x) const {
    return (x + alignment_ - 1) / alignment_ * alignment_;
  }

  uint32_t alignment_;
  std::string kv_bytes_;  ///< encoded key/value records
  uint64_t kv_count_ = 0;
  std::set<std::string> keys_;
  std::vector<TensorEntry> tensors_;
  std::set<std::string> tensor_names_;
};

}  // namespace decodebench::gguf
