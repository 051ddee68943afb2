// The GGUF reader on files written by the Python `gguf` package (tests/fixtures/
// write_gguf_fixture.py): every metadata value type read back exactly, v2 and v3, custom
// alignments, tensor geometry and bytes; the typed getters; the type table; real vocab files.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>

#include "core/error.hpp"
#include "core/gguf/reader.hpp"
#include "core/quant/weight_type.hpp"
#include "tests/support/support.hpp"

namespace decodebench::testing {
namespace {

using gguf::Reader;
using gguf::ValueType;

std::filesystem::path fixture_script() {
  return source_dir() / "tests" / "fixtures" / "write_gguf_fixture.py";
}

// Runs the fixture writer; returns the expected-description JSON it wrote.
nlohmann::json write_fixture(const std::filesystem::path& out, std::vector<std::string> args) {
  const auto expected = out.string() + ".json";
  std::vector<std::string> argv{python(), fixture_script().string(), out.string(), "--expected",
                                expected};
  argv.insert(argv.end(), args.begin(), args.end());
  const CommandResult r = run_command(argv, 120);
  if (r.exit_code != 0) {
    ADD_FAILURE() << "fixture writer failed: " << r.err;
    return nullptr;
  }
  return nlohmann::json::parse(read_file(expected));
}

// Message of the Error `fn` throws (kUsage expected), "" when it does not throw.
template <typename Fn>
std::string error_of(Fn&& fn) {
  try {
    fn();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kUsage);
    return e.what();
  }
  return "";
}

std::vector<uint8_t> from_hex(const std::string& hex) {
  std::vector<uint8_t> out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    out.push_back(static_cast<uint8_t>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  }
  return out;
}

void expect_tensors_match(const Reader& r, const nlohmann::json& expected) {
  const auto& tensors = expected["tensors"];
  ASSERT_EQ(r.tensors().size(), tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    const auto& e = tensors[i];
    const gguf::TensorInfo& t = r.tensors()[i];
    SCOPED_TRACE(t.name);
    EXPECT_EQ(t.name, e["name"].get<std::string>());
    EXPECT_EQ(t.type_id, e["type_id"].get<uint32_t>());
    ASSERT_EQ(t.n_dims, e["dims"].size());
    for (uint32_t d = 0; d < 4; ++d) {
      EXPECT_EQ(t.dims[d], d < t.n_dims ? e["dims"][d].get<int64_t>() : 1);
    }
    EXPECT_EQ(t.bytes, e["bytes"].get<uint64_t>());
    EXPECT_EQ(t.file_offset, r.data_offset() + t.offset);
    EXPECT_EQ(t.offset % r.alignment(), 0u);
    const std::vector<uint8_t> want = from_hex(e["hex"].get<std::string>());
    ASSERT_EQ(want.size(), t.bytes);
    EXPECT_EQ(std::vector<uint8_t>(r.tensor_data(t), r.tensor_data(t) + t.bytes), want);
  }
}

class GgufFixtureVersion : public ::testing::TestWithParam<int> {};

TEST_P(GgufFixtureVersion, EveryValueTypeReadsBackExactly) {
  DB_REQUIRE_PYTHON_GGUF();
  TempDir dir;
  const auto path = dir / "types.gguf";
  const nlohmann::json expected =
      write_fixture(path, {"--kind", "types", "--version", std::to_string(GetParam())});
  ASSERT_FALSE(expected.is_null());
  const Reader r(path.string());
  EXPECT_EQ(r.version(), static_cast<uint32_t>(GetParam()));
  EXPECT_EQ(r.alignment(), 32u);
  EXPECT_EQ(r.data_offset() % 32, 0u);

  const auto value = [&](const char* key) -> const gguf::Value& {
    const gguf::KeyValue* kv = r.find(key);
    if (kv == nullptr) throw std::runtime_error(std::string("missing ") + key);
    return kv->value;
  };
  EXPECT_EQ(value("test.u8").type, ValueType::kUint8);
  EXPECT_EQ(value("test.u8").u, 255u);
  EXPECT_EQ(value("test.i8").type, ValueType::kInt8);
  EXPECT_EQ(value("test.i8").i, -128);
  EXPECT_EQ(value("test.u16").type, ValueType::kUint16);
  EXPECT_EQ(value("test.u16").u, 65535u);
  EXPECT_EQ(value("test.i16").type, ValueType::kInt16);
  EXPECT_EQ(value("test.i16").i, -32768);
  EXPECT_EQ(value("test.u32").type, ValueType::kUint32);
  EXPECT_EQ(value("test.u32").u, 4294967295u);
  EXPECT_EQ(value("test.i32").type, ValueType::kInt32);
  EXPECT_EQ(value("test.i32").i, std::numeric_limits<int32_t>::min());
  EXPECT_EQ(value("test.f32").type, ValueType::kFloat32);
  EXPECT_EQ(value("test.f32").f, static_cast<double>(0.1f));
  EXPECT_EQ(value("test.bool_true").type, ValueType::kBool);
  EXPECT_TRUE(value("test.bool_true").b);
  EXPECT_FALSE(value("test.bool_false").b);
  EXPECT_EQ(value("test.string").type, ValueType::kString);
  EXPECT_EQ(value("test.string").s, "h\xC3\xA9llo w\xC3\xB6rld \xE2\x96\x81 \xF0\x9F\x99\x82");
  EXPECT_EQ(value("test.string_nul").s, std::string("a\0b", 3));
  EXPECT_EQ(value("test.string_empty").s, "");
  EXPECT_EQ(value("test.u64").type, ValueType::kUint64);
  EXPECT_EQ(value("test.u64").u, std::numeric_limits<uint64_t>::max());
  EXPECT_EQ(value("test.i64").type, ValueType::kInt64);
  EXPECT_EQ(value("test.i64").i, std::numeric_limits<int64_t>::min());
  EXPECT_EQ(value("test.f64").type, ValueType::kFloat64);
  EXPECT_EQ(value("test.f64").f, 3.141592653589793);

  const auto array = [&](const char* key, ValueType elem) -> const std::vector<gguf::Value>& {
    const gguf::Value& v = value(key);
    EXPECT_EQ(v.type, ValueType::kArray) << key;
    EXPECT_EQ(v.elem_type, elem) << key;
    for (const gguf::Value& e : v.array) EXPECT_EQ(e.type, elem) << key;
    return v.array;
  };
  {
    const auto& a = array("test.arr_u8", ValueType::kUint8);
    ASSERT_EQ(a.size(), 3u);
    EXPECT_EQ(a[0].u, 0u);
    EXPECT_EQ(a[1].u, 1u);
    EXPECT_EQ(a[2].u, 255u);
  }
  {
    const auto& a = array("test.arr_i8", ValueType::kInt8);
    ASSERT_EQ(a.size(), 3u);
    EXPECT_EQ(a[0].i, -1);
    EXPECT_EQ(a[1].i, 127);
    EXPECT_EQ(a[2].i, -128);
  }
  {
    const auto& a = array("test.arr_u16", ValueType::kUint16);
    ASSERT_EQ(a.size(), 2u);
    EXPECT_EQ(a[1].u, 65535u);
  }
  {
    const auto& a = array("test.arr_i16", ValueType::kInt16);
    ASSERT_EQ(a.size(), 2u);
    EXPECT_EQ(a[0].i, -32768);
    EXPECT_EQ(a[1].i, 32767);
  }
  {
    const auto& a = array("test.arr_u32", ValueType::kUint32);
    ASSERT_EQ(a.size(), 2u);
    EXPECT_EQ(a[0].u, 7u);
    EXPECT_EQ(a[1].u, 4294967295u);
  }
  EXPECT_EQ(r.get_int_array("test.arr_i32"),
            (std::vector<int64_t>{std::numeric_limits<int32_t>::min(),
                                  std::numeric_limits<int32_t>::max(), 0}));
  array("test.arr_i32", ValueType::kInt32);
  EXPECT_EQ(r.get_float_array("test.arr_f32"),
            (std::vector<double>{1.5, -2.25, static_cast<double>(0.1f)}));
  array("test.arr_f32", ValueType::kFloat32);
  {
    const auto& a = array("test.arr_bool", ValueType::kBool);
    ASSERT_EQ(a.size(), 3u);
    EXPECT_TRUE(a[0].b);
    EXPECT_FALSE(a[1].b);
    EXPECT_TRUE(a[2].b);
  }
  EXPECT_EQ(r.get_string_array("test.arr_str"),
            (std::vector<std::string>{"a", "", "\xE2\x96\x81x", "<0x0A>"}));
  array("test.arr_str", ValueType::kString);
  {
    const auto& a = array("test.arr_u64", ValueType::kUint64);
    ASSERT_EQ(a.size(), 2u);
    EXPECT_EQ(a[1].u, std::numeric_limits<uint64_t>::max());
  }
  EXPECT_EQ(r.get_int_array("test.arr_i64"),
            (std::vector<int64_t>{std::numeric_limits<int64_t>::min(),
                                  std::numeric_limits<int64_t>::max()}));
  EXPECT_EQ(r.get_float_array("test.arr_f64"), (std::vector<double>{0.5, -1e300}));
  const std::vector<int64_t> long_array = r.get_int_array("test.arr_long");
  ASSERT_EQ(long_array.size(), 1000u);
  for (size_t k = 0; k < long_array.size(); ++k) {
    ASSERT_EQ(long_array[k], 3 * static_cast<int64_t>(k) - 500);
  }
  EXPECT_EQ(r.get_string("general.architecture"), "llama");
  // Key order and record offsets follow the file.
  ASSERT_GE(r.metadata().size(), 2u);
  EXPECT_EQ(r.metadata()[0].key, "general.architecture");
  EXPECT_EQ(r.metadata()[0].offset, 24u);
  for (size_t k = 1; k < r.metadata().size(); ++k) {
    EXPECT_GT(r.metadata()[k].offset, r.metadata()[k - 1].offset);
  }

  expect_tensors_match(r, expected);
  // A few geometry facts spelled out (independent of the Python description).
  const gguf::TensorInfo* q4k = r.find_tensor("t.q4_k");
  ASSERT_NE(q4k, nullptr);
  EXPECT_EQ(q4k->type_id, 12u);
  EXPECT_EQ(q4k->dims[0], 512);
  EXPECT_EQ(q4k->bytes, 2u * 144u);
  const gguf::TensorInfo* bf16 = r.find_tensor("t.bf16");
  ASSERT_NE(bf16, nullptr);
  EXPECT_EQ(bf16->type_id, 30u);
  EXPECT_EQ(bf16->bytes, 8u * 3u * 2u);
  const gguf::TensorInfo* f4d = r.find_tensor("t.f16_4d");
  ASSERT_NE(f4d, nullptr);
  EXPECT_EQ(f4d->n_dims, 4u);
  EXPECT_EQ(f4d->elements(), 12);
  const gguf::TensorInfo* f32 = r.find_tensor("t.f32");
  ASSERT_NE(f32, nullptr);
  float first[3];
  std::memcpy(first, r.tensor_data(*f32), sizeof(first));
  EXPECT_EQ(first[0], -1.0f);
  EXPECT_EQ(first[1], -0.5f);
  EXPECT_EQ(first[2], 0.0f);
}

INSTANTIATE_TEST_SUITE_P(Versions, GgufFixtureVersion, ::testing::Values(2, 3));

class GgufFixtureAlignment : public ::testing::TestWithParam<int> {};

TEST_P(GgufFixtureAlignment, CustomAlignmentPlacesTensors) {
  DB_REQUIRE_PYTHON_GGUF();
  TempDir dir;
  const auto path = dir / "aligned.gguf";
  const int alignment = GetParam();
  const nlohmann::json expected =
      write_fixture(path, {"--kind", "types", "--alignment", std::to_string(alignment)});
  ASSERT_FALSE(expected.is_null());
  const Reader r(path.string());
  EXPECT_EQ(r.alignment(), static_cast<uint64_t>(alignment));
  EXPECT_EQ(r.get_uint("general.alignment"), static_cast<uint64_t>(alignment));
  EXPECT_EQ(r.data_offset() % alignment, 0u);
  expect_tensors_match(r, expected);
}

INSTANTIATE_TEST_SUITE_P(Alignments, GgufFixtureAlignment, ::testing::Values(1, 16, 64, 256, 1024));

TEST(GgufFixture, TypedGetters) {
  DB_REQUIRE_PYTHON_GGUF();
  TempDir dir;
  const auto path = dir / "types.gguf";
  ASSERT_FALSE(write_fixture(path, {"--kind", "types"}).is_null());
  const Reader r(path.string());

  // Any integer width is accepted.
  EXPECT_EQ(r.get_uint("test.u8"), 255u);
  EXPECT_EQ(r.get_uint("test.u64"), std::numeric_limits<uint64_t>::max());
  EXPECT_EQ(r.get_int("test.u32"), 4294967295);
  EXPECT_EQ(r.get_int("test.i8"), -128);
  EXPECT_EQ(r.get_int("test.i64"), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(r.get_float("test.f32"), static_cast<double>(0.1f));
  EXPECT_EQ(r.get_float("test.f64"), 3.141592653589793);
  EXPECT_EQ(r.get_float("test.u16"), 65535.0);
  EXPECT_EQ(r.get_float("test.i16"), -32768.0);
  EXPECT_EQ(r.get_bool("test.bool_false"), false);
  EXPECT_EQ(r.get_string("test.string_empty"), "");

  // Absent keys.
  EXPECT_EQ(r.get_uint("no.such.key"), std::nullopt);
  EXPECT_EQ(r.get_int("no.such.key"), std::nullopt);
  EXPECT_EQ(r.get_float("no.such.key"), std::nullopt);
  EXPECT_EQ(r.get_bool("no.such.key"), std::nullopt);
  EXPECT_EQ(r.get_string("no.such.key"), std::nullopt);
  EXPECT_TRUE(r.get_string_array("no.such.key").empty());
  EXPECT_TRUE(r.get_float_array("no.such.key").empty());
  EXPECT_TRUE(r.get_int_array("no.such.key").empty());
  EXPECT_EQ(r.find("no.such.key"), nullptr);

  // Wrong types name the key, its type and what was expected.
  const auto has = [](const std::string& msg, const std::string& part) {
    return msg.find(part) != std::string::npos;
  };
  std::string e = error_of([&] { (void)r.get_uint("test.i8"); });
  EXPECT_TRUE(has(e, "'test.i8' is negative (-128)")) << e;
  e = error_of([&] { (void)r.get_int("test.u64"); });
  EXPECT_TRUE(has(e, "'test.u64' value 18446744073709551615 does not fit int64")) << e;
  e = error_of([&] { (void)r.get_uint("test.string"); });
  EXPECT_TRUE(has(e, "metadata key 'test.string' has type STRING, expected an unsigned integer"))
      << e;
  EXPECT_TRUE(has(e, path.string() + ": offset ")) << e;
  e = error_of([&] { (void)r.get_bool("test.u8"); });
  EXPECT_TRUE(has(e, "'test.u8' has type UINT8, expected BOOL")) << e;
  e = error_of([&] { (void)r.get_string("test.arr_str"); });
  EXPECT_TRUE(has(e, "'test.arr_str' has type ARRAY[STRING], expected STRING")) << e;
  e = error_of([&] { (void)r.get_float("test.bool_true"); });
  EXPECT_TRUE(has(e, "'test.bool_true' has type BOOL")) << e;
  e = error_of([&] { (void)r.get_string_array("test.arr_u8"); });
  EXPECT_TRUE(has(e, "'test.arr_u8' has type ARRAY[UINT8], expected ARRAY[STRING]")) << e;
  e = error_of([&] { (void)r.get_int_array("test.arr_f32"); });
  EXPECT_TRUE(has(e, "'test.arr_f32' has type ARRAY[FLOAT32]")) << e;
  e = error_of([&] { (void)r.get_int_array("test.arr_u64"); });
  EXPECT_TRUE(has(e, "does not fit int64")) << e;
  e = error_of([&] { (void)r.get_float_array("test.arr_str"); });
  EXPECT_TRUE(has(e, "ARRAY[STRING]")) << e;
  e = error_of([&] { (void)r.get_int_array("test.u32"); });
  EXPECT_TRUE(has(e, "'test.u32' has type UINT32")) << e;
  // Integer arrays convert to floats.
  EXPECT_EQ(r.get_float_array("test.arr_i16"), (std::vector<double>{-32768.0, 32767.0}));
}

TEST(GgufFixture, BigEndianFileIsRefused) {
  DB_REQUIRE_PYTHON_GGUF();
  TempDir dir;
  const auto path = dir / "be.gguf";
  ASSERT_FALSE(write_fixture(path, {"--kind", "types", "--big-endian"}).is_null());
  const std::string e = error_of([&] { Reader r(path.string()); });
  EXPECT_EQ(e, path.string() +
                   ": offset 4: big-endian GGUF files are not supported (version reads as "
                   "0x03000000)");
}

TEST(GgmlTypeTraits, TableMatchesTheFacts) {
  struct Row {
    uint32_t id;
    const char* name;
    uint32_t elems;
    uint32_t bytes;
  };
  // gguf-facts.md §2.2 / §2.4.
  const Row rows[] = {
      {0, "F32", 1, 4},         {1, "F16", 1, 2},         {2, "Q4_0", 32, 18},
      {3, "Q4_1", 32, 20},      {6, "Q5_0", 32, 22},      {7, "Q5_1", 32, 24},
      {8, "Q8_0", 32, 34},      {9, "Q8_1", 32, 36},      {10, "Q2_K", 256, 84},
      {11, "Q3_K", 256, 110},   {12, "Q4_K", 256, 144},   {13, "Q5_K", 256, 176},
      {14, "Q6_K", 256, 210},   {15, "Q8_K", 256, 292},   {16, "IQ2_XXS", 256, 66},
      {17, "IQ2_XS", 256, 74},  {18, "IQ3_XXS", 256, 98}, {19, "IQ1_S", 256, 50},
      {20, "IQ4_NL", 32, 18},   {21, "IQ3_S", 256, 110},  {22, "IQ2_S", 256, 82},
      {23, "IQ4_XS", 256, 136}, {24, "I8", 1, 1},         {25, "I16", 1, 2},
      {26, "I32", 1, 4},        {27, "I64", 1, 8},        {28, "F64", 1, 8},
      {29, "IQ1_M", 256, 56},   {30, "BF16", 1, 2},       {34, "TQ1_0", 256, 54},
      {35, "TQ2_0", 256, 66},   {39, "MXFP4", 32, 17},    {40, "NVFP4", 64, 36},
      {41, "Q1_0", 128, 18},    {42, "Q2_0", 64, 18},
  };
  for (const Row& row : rows) {
    const gguf::GgmlTypeTraits* t = gguf::ggml_type_traits(row.id);
    ASSERT_NE(t, nullptr) << row.id;
    EXPECT_STREQ(t->name, row.name);
    EXPECT_EQ(t->block_elems, row.elems) << row.name;
    EXPECT_EQ(t->block_bytes, row.bytes) << row.name;
    EXPECT_EQ(gguf::ggml_type_name(row.id), row.name);
  }
  for (uint32_t removed : {4u, 5u, 31u, 32u, 33u, 36u, 37u, 38u, 43u, 1000u}) {
    EXPECT_EQ(gguf::ggml_type_traits(removed), nullptr) << removed;
    EXPECT_EQ(gguf::ggml_type_name(removed), "type#" + std::to_string(removed));
  }
  // The supported weight types agree with core/quant/weight_type.hpp.
  for (WeightType w : kAllWeightTypes) {
    const WeightTraits wt = weight_traits(w);
    const gguf::GgmlTypeTraits* t = gguf::ggml_type_traits(static_cast<uint32_t>(w));
    ASSERT_NE(t, nullptr) << wt.name;
    EXPECT_STREQ(t->name, wt.name);
    EXPECT_EQ(t->block_elems, static_cast<uint32_t>(wt.block_elems)) << wt.name;
    EXPECT_EQ(t->block_bytes, static_cast<uint32_t>(wt.block_bytes)) << wt.name;
  }
  EXPECT_STREQ(gguf::value_type_name(ValueType::kFloat64), "FLOAT64");
  EXPECT_STREQ(gguf::value_type_name(ValueType::kArray), "ARRAY");
}

TEST(GgmlTypeTraits, AgreesWithThePythonGgufPackage) {
  DB_REQUIRE_PYTHON_GGUF();
  const CommandResult r =
      run_command({python(), "-c",
                   "import gguf, json; print(json.dumps({int(t): [t.name, b, s] for t, (b, s) in "
                   "gguf.GGML_QUANT_SIZES.items()}))"},
                  60);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json table = nlohmann::json::parse(r.out);
  EXPECT_GE(table.size(), 30u);
  for (const auto& [id_text, row] : table.items()) {
    const auto id = static_cast<uint32_t>(std::stoul(id_text));
    const gguf::GgmlTypeTraits* t = gguf::ggml_type_traits(id);
    ASSERT_NE(t, nullptr) << id_text;
    EXPECT_EQ(t->name, row[0].get<std::string>());
    EXPECT_EQ(t->block_elems, row[1].get<uint32_t>()) << t->name;
    // gguf-py lists Q8_1 as 40 bytes; ggml's block is 36 (gguf-facts.md §2.2).
    if (id != 9) {
      EXPECT_EQ(t->block_bytes, row[2].get<uint32_t>()) << t->name;
    }
  }
}

TEST(GgufVocabFiles, RealVocabularyFilesRead) {
  const auto folder = source_dir() / "tests" / "data" / "tokenizer";
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(folder)) {
    if (entry.path().extension() != ".gguf") continue;
    ++files;
    SCOPED_TRACE(entry.path().filename().string());
    const Reader r(entry.path().string());
    EXPECT_TRUE(r.version() == 2 || r.version() == 3);
    EXPECT_TRUE(r.tensors().empty());
    EXPECT_TRUE(r.get_string("general.architecture").has_value());
    const std::string model = r.get_string("tokenizer.ggml.model").value_or("");
    EXPECT_TRUE(model == "llama" || model == "gpt2") << model;
    const std::vector<std::string> tokens = r.get_string_array("tokenizer.ggml.tokens");
    EXPECT_GT(tokens.size(), 1000u);
    EXPECT_EQ(r.get_int_array("tokenizer.ggml.token_type").size(), tokens.size());
    if (model == "llama") {
      EXPECT_EQ(r.get_float_array("tokenizer.ggml.scores").size(), tokens.size());
    } else {
      EXPECT_GT(r.get_string_array("tokenizer.ggml.merges").size(), 1000u);
    }
  }
  EXPECT_EQ(files, 4);
}

TEST(GgufVocabFiles, MetadataAgreesWithThePythonReader) {
  DB_REQUIRE_PYTHON_GGUF();
  const auto path = source_dir() / "tests" / "data" / "tokenizer" / "ggml-vocab-phi-3.gguf";
  // Key, value type id and array length (or 0) for every record, from gguf.GGUFReader.
  const CommandResult py =
      run_command({python(), "-c",
                   "import gguf, json, sys\n"
                   "r = gguf.GGUFReader(sys.argv[1])\n"
                   "out = []\n"
                   "for f in r.fields.values():\n"
                   "    n = len(f.data) if f.types[0] == gguf.GGUFValueType.ARRAY else 0\n"
                   "    out.append([f.name, int(f.types[0]), n])\n"
                   "print(json.dumps(out))\n",
                   path.string()},
                  120);
  ASSERT_EQ(py.exit_code, 0) << py.err;
  nlohmann::json fields = nlohmann::json::parse(py.out);
  const Reader r(path.string());
  // GGUFReader adds pseudo-fields for the header (GGUF.version, ...); skip them.
  std::vector<nlohmann::json> real;
  for (const auto& f : fields) {
    if (f[0].get<std::string>().rfind("GGUF.", 0) != 0) real.push_back(f);
  }
  ASSERT_EQ(r.metadata().size(), real.size());
  for (size_t k = 0; k < real.size(); ++k) {
    const gguf::KeyValue& kv = r.metadata()[k];
    EXPECT_EQ(kv.key, real[k][0].get<std::string>());
    EXPECT_EQ(static_cast<int>(kv.value.type), real[k][1].get<int>()) << kv.key;
    EXPECT_EQ(kv.value.array.size(), real[k][2].get<size_t>()) << kv.key;
  }
}

}  // namespace
}  // namespace decodebench::testing
