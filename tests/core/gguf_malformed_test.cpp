// The GGUF reader on hand-built files: the reference layout read back exactly, edge cases that
// must be accepted, and every malformed file (corrupt counts, lengths, types, offsets, truncation
// anywhere, random corruption) refused with an exit-2 Error naming the path and the offset.
#include <gtest/gtest.h>

#include <random>
#include <string>

#include "core/error.hpp"
#include "core/gguf/reader.hpp"
#include "tests/core/gguf_bytes.hpp"
#include "tests/support/support.hpp"

namespace decodebench::testing {
namespace {

using gguf::Reader;
using gguf::ValueType;

// Reads `bytes` through a file; returns the Error's message ("" when the file was accepted).
// Any exception other than decodebench::Error with kUsage fails the test.
std::string read_error(const std::string& bytes, const TempDir& dir,
                       const std::string& name = "f.gguf") {
  const auto path = dir / name;
  GgufBytes b;
  b.data = bytes;
  b.write(path);
  try {
    Reader r(path.string());
    return "";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kUsage) << e.what();
    return e.what();
  }
}

TEST(GgufBytesFile, ReferenceFileReadsBack) {
  TempDir dir;
  const GgufBytes b = build_gguf(base_spec());
  b.write(dir / "base.gguf");
  Reader r((dir / "base.gguf").string());
  EXPECT_EQ(r.version(), 3u);
  EXPECT_EQ(r.file_size(), b.data.size());
  EXPECT_EQ(r.alignment(), 32u);
  EXPECT_EQ(r.data_offset(), b.at("data"));
  EXPECT_EQ(r.data_offset() % 32, 0u);
  ASSERT_EQ(r.metadata().size(), 6u);
  EXPECT_EQ(r.metadata()[3].offset, b.at("kv3"));
  EXPECT_EQ(r.get_string("general.architecture"), "llama");
  EXPECT_EQ(r.get_int_array("test.ints"), (std::vector<int64_t>{1, 2, 3}));
  EXPECT_EQ(r.get_string_array("test.strs"), (std::vector<std::string>{"ab", "c"}));
  const gguf::KeyValue* empty = r.find("test.empty");
  ASSERT_NE(empty, nullptr);
  EXPECT_EQ(empty->value.type, ValueType::kArray);
  EXPECT_EQ(empty->value.elem_type, ValueType::kInt32);
  EXPECT_TRUE(empty->value.array.empty());
  EXPECT_EQ(r.get_bool("test.flag"), true);

  ASSERT_EQ(r.tensors().size(), 3u);
  const uint64_t expect_bytes[] = {64, 34, 144};
  const uint64_t expect_offset[] = {0, 64, 128};
  for (size_t i = 0; i < 3; ++i) {
    const gguf::TensorInfo& t = r.tensors()[i];
    EXPECT_EQ(t.bytes, expect_bytes[i]) << t.name;
    EXPECT_EQ(t.offset, expect_offset[i]) << t.name;
    EXPECT_EQ(t.file_offset, b.at("t" + std::to_string(i))) << t.name;
    EXPECT_EQ(t.info_offset, b.at("ti" + std::to_string(i))) << t.name;
    EXPECT_EQ(r.tensor_data(t), r.tensor_data(r.tensors()[0]) + expect_offset[i]);
    EXPECT_EQ(std::memcmp(r.tensor_data(t), b.data.data() + t.file_offset, t.bytes), 0);
  }
  EXPECT_EQ(r.tensors()[0].n_dims, 2u);
  EXPECT_EQ(r.tensors()[0].dims[1], 2);
  EXPECT_EQ(r.tensors()[0].elements(), 16);
  EXPECT_EQ(r.tensors()[1].dims[1], 1);  // missing dims are 1
  EXPECT_EQ(r.find_tensor("c"), &r.tensors()[2]);
  EXPECT_EQ(r.find_tensor("d"), nullptr);
}

TEST(GgufBytesFile, AcceptsEdgeCases) {
  TempDir dir;
  // No tensors, no metadata: just the header.
  EXPECT_EQ(read_error(build_gguf(FileSpec{}).data, dir), "");
  {
    FileSpec s;
    s.version = 2;
    EXPECT_EQ(read_error(build_gguf(s).data, dir), "");
  }
  // A 63-byte tensor name is the longest allowed.
  {
    FileSpec s = base_spec();
    s.tensors[1].name = std::string(63, 'n');
    EXPECT_EQ(read_error(build_gguf(s).data, dir), "");
  }
  // Custom alignments, including 1 (tensors packed back to back).
  for (uint32_t a : {1u, 8u, 64u, 4096u}) {
    FileSpec s = base_spec();
    s.alignment = a;
    s.kvs[1].value = v_u32(a);
    const GgufBytes b = build_gguf(s);
    b.write(dir / "aligned.gguf");
    Reader r((dir / "aligned.gguf").string());
    EXPECT_EQ(r.alignment(), a);
    EXPECT_EQ(r.data_offset(), b.at("data"));
    for (size_t i = 0; i < 3; ++i) {
      EXPECT_EQ(r.tensors()[i].file_offset, b.at("t" + std::to_string(i))) << "alignment " << a;
    }
  }
  // Tensors may be stored out of info order, with gaps, as long as they do not overlap.
  {
    FileSpec s = base_spec();
    s.tensors[0].offset = 256;
    s.tensors[1].offset = 0;
    s.tensors[2].offset = 64;
    GgufBytes b = build_gguf(s);
    const uint64_t data = b.at("data");
    b.data.resize(data + 256 + 64, '\x01');
    b.write(dir / "order.gguf");
    Reader r((dir / "order.gguf").string());
    EXPECT_EQ(r.tensors()[0].file_offset, data + 256);
  }
  // Trailing bytes after the last tensor are allowed.
  {
    GgufBytes b = build_gguf(base_spec());
    b.data += std::string(100, '\0');
    EXPECT_EQ(read_error(b.data, dir), "");
  }
}

TEST(GgufBytesFile, EveryKnownTypeIdIsAcceptedWithItsGeometry) {
  TempDir dir;
  int known = 0;
  for (uint32_t id = 0; id < 64; ++id) {
    const gguf::GgmlTypeTraits* tr = gguf::ggml_type_traits(id);
    FileSpec s;
    s.kvs = {{"general.architecture", v_string("llama")}};
    const uint64_t block_elems = tr != nullptr ? tr->block_elems : 1;
    const uint64_t block_bytes = tr != nullptr ? tr->block_bytes : 1;
    s.tensors = {{"w", {block_elems * 2, 3}, id, block_bytes * 2 * 3, std::nullopt}};
    const std::string err = read_error(build_gguf(s).data, dir);
    if (tr == nullptr) {
      EXPECT_NE(err.find("unknown or removed ggml type id " + std::to_string(id)),
                std::string::npos)
          << err;
      continue;
    }
    ++known;
    EXPECT_EQ(err, "") << tr->name;
    // One byte less data than the geometry says must be refused.
    GgufBytes b = build_gguf(s);
    b.data.pop_back();
    EXPECT_NE(read_error(b.data, dir).find("run past end of file"), std::string::npos) << tr->name;
  }
  EXPECT_EQ(known, 35);  // ids 0..42 minus the 8 removed ones
}

TEST(GgufBytesFile, MalformedFilesAreRefusedWithTheOffset) {
  TempDir dir;
  const auto cases = malformed_cases();
  EXPECT_GE(cases.size(), 50u);
  for (const MalformedCase& c : cases) {
    const std::string name = c.name + ".gguf";
    const std::string err = read_error(c.bytes, dir, name);
    ASSERT_NE(err, "") << c.name << " was accepted";
    EXPECT_NE(err.find((dir / name).string() + ": offset "), std::string::npos)
        << c.name << ": " << err;
    EXPECT_NE(err.find(c.expect), std::string::npos) << c.name << ": " << err;
  }
}

TEST(GgufBytesFile, ErrorNamesTheOffsetOfTheBrokenField) {
  TempDir dir;
  GgufBytes b = build_gguf(base_spec());
  b.put_u64(b.at("kv0"), std::numeric_limits<uint64_t>::max());
  const std::string err = read_error(b.data, dir, "model.gguf");
  EXPECT_EQ(err, (dir / "model.gguf").string() +
                     ": offset 24: metadata key length 18446744073709551615 runs past end of file "
                     "(size " +
                     std::to_string(b.data.size()) + ")");

  b = build_gguf(base_spec());
  b.put_u64(b.at("ti1.offset"), 65);
  EXPECT_NE(read_error(b.data, dir).find("offset " + std::to_string(b.at("ti1.offset")) + ":"),
            std::string::npos);
}

TEST(GgufBytesFile, TruncationAnywhereIsRefused) {
  TempDir dir;
  const GgufBytes b = build_gguf(base_spec());
  // The reference file ends with the last tensor byte, so every proper prefix is broken.
  for (size_t n = 0; n < b.data.size(); ++n) {
    const std::string err = read_error(b.data.substr(0, n), dir);
    ASSERT_NE(err, "") << "prefix of " << n << " bytes was accepted";
    EXPECT_NE(err.find(": offset "), std::string::npos) << n << ": " << err;
  }
}

TEST(GgufBytesFile, RandomCorruptionNeverCrashes) {
  TempDir dir;
  const GgufBytes base = build_gguf(base_spec());
  std::mt19937_64 rng(42);
  int accepted = 0;
  int refused = 0;
  for (int iter = 0; iter < 3000; ++iter) {
    GgufBytes b = base;
    const size_t header_part = b.at("data");  // corrupt the structure, not the tensor bytes
    const int flips = 1 + static_cast<int>(rng() % 3);
    for (int k = 0; k < flips; ++k) {
      const size_t at = rng() % header_part;
      switch (rng() % 3) {
        case 0:
          b.data[at] = static_cast<char>(rng());
          break;
        case 1:
          b.data[at] ^= static_cast<char>(1u << (rng() % 8));
          break;
        default:
          if (at + 8 <= b.data.size()) b.put_u64(at, rng() >> (rng() % 64));
      }
    }
    if (rng() % 8 == 0) b.data.resize(rng() % b.data.size());
    const auto path = dir / "fuzz.gguf";
    b.write(path);
    try {
      Reader r(path.string());
      ++accepted;
      for (const gguf::TensorInfo& t : r.tensors()) {
        ASSERT_LE(t.file_offset + t.bytes, r.file_size());
        ASSERT_EQ(t.offset % r.alignment(), 0u);
      }
    } catch (const Error& e) {
      ++refused;
      ASSERT_EQ(e.code(), ExitCode::kUsage) << e.what();
      ASSERT_NE(std::string(e.what()).find("offset"), std::string::npos) << e.what();
    }
  }
  EXPECT_GT(refused, 1000);
  EXPECT_GT(accepted, 0);  // flips inside string bytes or padding keep the file valid
}

TEST(GgufBytesFile, MissingAndNonRegularFiles) {
  TempDir dir;
  try {
    Reader r((dir / "absent.gguf").string());
    FAIL() << "absent file accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kUsage);
    EXPECT_NE(std::string(e.what()).find("absent.gguf: cannot open"), std::string::npos);
  }
  try {
    Reader r(dir.path().string());
    FAIL() << "folder accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kUsage);
    EXPECT_NE(std::string(e.what()).find("not a regular file"), std::string::npos);
  }
}

TEST(GgufBytesFile, MetadataArrayElementLimit) {
  TempDir dir;
  // A valid file whose arrays together exceed the reader's element limit is refused before any
  // element is materialised (UINT8 arrays: 1 byte per element on disk, ~100 in memory).
  const uint64_t n = gguf::kMaxMetadataArrayElements / 2 + 1;
  GgufBytes b;
  b.raw("GGUF", 4);
  b.u32(3);
  b.u64(0);
  b.u64(2);
  for (const char* key : {"x.a", "x.b"}) {
    b.str(key);
    b.u32(9);
    b.u32(0);
    b.u64(n);
    b.data.append(n, '\x07');
  }
  const std::string err = read_error(b.data, dir);
  EXPECT_NE(err.find("metadata key 'x.b': metadata arrays hold more than"), std::string::npos)
      << err;
}

}  // namespace
}  // namespace decodebench::testing
