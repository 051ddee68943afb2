#include "core/gguf/writer.hpp"

#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <memory>
#include <vector>

#include "core/error.hpp"
#include "core/gguf/reader.hpp"
#include "core/output_file.hpp"
#include "core/result/json_file.hpp"

namespace decodebench::gguf {

static_assert(std::endian::native == std::endian::little,
              "the GGUF writer emits little-endian files by copying host integers");

namespace {

template <typename T>
void put(std::string& out, T value) {
  char bytes[sizeof(T)];
  std::memcpy(bytes, &value, sizeof(T));
  out.append(bytes, sizeof(T));
}

void put_string(std::string& out, const std::string& s) {
  put<uint64_t>(out, s.size());
  out += s;
}

uint32_t id(ValueType t) { return static_cast<uint32_t>(t); }

}  // namespace

void TensorSink::write(const void* data, uint64_t bytes) {
  if (bytes == 0) return;
  if (std::fwrite(data, 1, bytes, file_) != bytes) throw write_error(path_, errno);
  written_ += bytes;
}

Writer::Writer(uint32_t alignment) : alignment_(alignment) {
  if (alignment == 0 || !std::has_single_bit(alignment)) {
    throw usage_error("GGUF alignment " + std::to_string(alignment) + " is not a power of two");
  }
  if (alignment != kDefaultAlignment) add_uint32("general.alignment", alignment);
}

void Writer::begin_key(const std::string& key, uint32_t value_type) {
  if (key.empty()) throw usage_error("GGUF metadata key is empty");
  if (!keys_.insert(key).second) throw usage_error("GGUF metadata key '" + key + "' added twice");
  put_string(kv_bytes_, key);
  put<uint32_t>(kv_bytes_, value_type);
  ++kv_count_;
}

void Writer::add_uint32(const std::string& key, uint32_t value) {
  begin_key(key, id(ValueType::kUint32));
  put(kv_bytes_, value);
}

void Writer::add_uint64(const std::string& key, uint64_t value) {
  begin_key(key, id(ValueType::kUint64));
  put(kv_bytes_, value);
}

void Writer::add_int32(const std::string& key, int32_t value) {
  begin_key(key, id(ValueType::kInt32));
  put(kv_bytes_, value);
}

void Writer::add_float32(const std::string& key, float value) {
  begin_key(key, id(ValueType::kFloat32));
  put(kv_bytes_, value);
}

void Writer::add_bool(const std::string& key, bool value) {
  begin_key(key, id(ValueType::kBool));
  put<uint8_t>(kv_bytes_, value ? 1 : 0);
}

void Writer::add_string(const std::string& key, const std::string& value) {
  begin_key(key, id(ValueType::kString));
  put_string(kv_bytes_, value);
}

void Writer::add_string_array(const std::string& key, const std::vector<std::string>& values) {
  begin_key(key, id(ValueType::kArray));
  put<uint32_t>(kv_bytes_, id(ValueType::kString));
  put<uint64_t>(kv_bytes_, values.size());
  for (const std::string& v : values) put_string(kv_bytes_, v);
}

void Writer::add_int32_array(const std::string& key, const std::vector<int32_t>& values) {
  begin_key(key, id(ValueType::kArray));
  put<uint32_t>(kv_bytes_, id(ValueType::kInt32));
  put<uint64_t>(kv_bytes_, values.size());
  for (int32_t v : values) put(kv_bytes_, v);
}

void Writer::add_float32_array(const std::string& key, const std::vector<float>& values) {
  begin_key(key, id(ValueType::kArray));
  put<uint32_t>(kv_bytes_, id(ValueType::kFloat32));
  put<uint64_t>(kv_bytes_, values.size());
  for (float v : values) put(kv_bytes_, v);
}

void Writer::add_tensor(const std::string& name, const std::vector<int64_t>& dims, uint32_t type_id,
                        Source source) {
  if (name.empty() || name.size() > kMaxTensorName) {
    throw usage_error("GGUF tensor name '" + name + "' must have 1.." +
                      std::to_string(kMaxTensorName) + " bytes");
  }
  if (tensor_names_.count(name) != 0) throw usage_error("GGUF tensor '" + name + "' added twice");
  if (dims.empty() || dims.size() > kMaxDims) {
    throw usage_error("GGUF tensor '" + name + "' needs 1.." + std::to_string(kMaxDims) +
                      " dims, got " + std::to_string(dims.size()));
  }
  const GgmlTypeTraits* traits = ggml_type_traits(type_id);
  if (traits == nullptr) {
    throw usage_error("GGUF tensor '" + name + "': unknown ggml type id " +
                      std::to_string(type_id));
  }
  uint64_t elements = 1;
  for (int64_t d : dims) {
    if (d < 1) throw usage_error("GGUF tensor '" + name + "': dims must be >= 1");
    elements *= static_cast<uint64_t>(d);
  }
  if (dims[0] % traits->block_elems != 0) {
    throw usage_error("GGUF tensor '" + name + "': ne0 " + std::to_string(dims[0]) +
                      " is not a multiple of the " + traits->name + " block (" +
                      std::to_string(traits->block_elems) + " values)");
  }
  const uint64_t bytes = elements / traits->block_elems * traits->block_bytes;
  tensor_names_.insert(name);
  tensors_.push_back({name, dims, type_id, bytes, std::move(source)});
}

uint64_t Writer::file_bytes() const {
  uint64_t infos = 0;
  for (const TensorEntry& t : tensors_) infos += 8 + t.name.size() + 4 + 8 * t.dims.size() + 4 + 8;
  uint64_t size = align(24 + kv_bytes_.size() + infos);
  for (const TensorEntry& t : tensors_) size += align(t.bytes);
  return size;
}

void Writer::write(const std::string& path, const std::string& flag) const {
  check_destination(path, flag);
  if (path == "-") throw usage_error(flag + ": a GGUF file cannot go to stdout");
  // Header, key/values and tensor infos are encoded first; the tensor bytes follow.
  std::string head;
  head.append(kMagic, sizeof kMagic);
  put<uint32_t>(head, kWriteVersion);
  put<uint64_t>(head, tensors_.size());
  put<uint64_t>(head, kv_count_);
  head += kv_bytes_;
  uint64_t offset = 0;
  for (const TensorEntry& t : tensors_) {
    put_string(head, t.name);
    put<uint32_t>(head, static_cast<uint32_t>(t.dims.size()));
    for (int64_t d : t.dims) put<uint64_t>(head, static_cast<uint64_t>(d));
    put<uint32_t>(head, t.type_id);
    put<uint64_t>(head, offset);
    offset = align(offset + t.bytes);
  }
  head.resize(align(head.size()), '\0');

  std::vector<char> buffer(size_t{4} << 20);  // outlives `out` (declared first)
  OutputFile out(path, flag);                 // a temporary file renamed over `path` by commit()
  if (out.file() != stdout && out.file() != stderr) {
    std::setvbuf(out.file(), buffer.data(), _IOFBF, buffer.size());
  }
  TensorSink sink(out.file(), out.writing());
  sink.write(head.data(), head.size());
  static const char kZeros[256] = {};
  for (const TensorEntry& t : tensors_) {
    const uint64_t start = sink.written();
    t.source(sink);
    if (sink.written() - start != t.bytes) {
      throw runtime_error("GGUF tensor '" + t.name + "': its source wrote " +
                          std::to_string(sink.written() - start) + " bytes, expected " +
                          std::to_string(t.bytes));
    }
    // Every tensor, the last one included, is padded (as gguf-py and ggml write files), so the
    // data section is Σ align(bytes) long.
    for (uint64_t pad = align(t.bytes) - t.bytes; pad > 0;) {
      const uint64_t n = std::min<uint64_t>(pad, sizeof kZeros);
      sink.write(kZeros, n);
      pad -= n;
    }
  }
  out.commit();
}

}  // namespace decodebench::gguf
