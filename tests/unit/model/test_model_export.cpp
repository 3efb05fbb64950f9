// Shipping a model: float16 export, the manifest checked against zlib's own CRC-32, tampering
// detected, a verifier re-recorded for the exported encoder, and the default-model lookup.
#include <gtest/gtest.h>
#include <zlib.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "sieve/encoder.h"
#include "sieve/index.h"
#include "sieve/model.h"
#include "sieve/safetensors.h"
#include "sieve/verify.h"
#include "support/fixtures.h"
#include "support/test_util.h"

namespace sieve::test {
namespace {
namespace fs = std::filesystem;

std::string zlib_crc_hex(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  const uLong c = ::crc32(0L, reinterpret_cast<const Bytef*>(bytes.data()), static_cast<uInt>(bytes.size()));
  char buf[16];
  std::snprintf(buf, sizeof buf, "%08lx", c);
  return buf;
}

class ModelExport : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = make_temp_dir("export");
    src_ = dir_ + "/src";
    FixtureModelOptions f = tiny_model_options(5);
    f.bert_prefix = true;  // as an MLM checkpoint stores it
    write_fixture_model(src_, f);
  }
  std::string dir_, src_;
};

TEST_F(ModelExport, HalvesTheWeightsAndWritesAManifestZlibAgreesWith) {
  const std::string out = dir_ + "/out";
  export_model(src_, out);
  auto a = SafetensorsFile::open(src_ + "/model.safetensors");
  auto b = SafetensorsFile::open(out + "/model.safetensors");
  size_t compared = 0;
  for (const auto& name : a->names()) {
    if (name.rfind("cls.", 0) == 0) {
      EXPECT_FALSE(b->contains(name)) << name;
      continue;
    }
    ASSERT_TRUE(b->contains(name)) << name;
    const TensorView& tb = b->get(name);
    EXPECT_EQ(tb.dtype, DType::F16) << name;
    const std::vector<float> x = a->get(name).to_float(), y = tb.to_float();
    ASSERT_EQ(x.size(), y.size());
    // float16 keeps 11 significant bits: relative error at most 2^-11 in its normal range.
    for (size_t i = 0; i < x.size(); ++i) EXPECT_LE(std::abs(x[i] - y[i]), std::abs(x[i]) / 2048.0 + 6.2e-5) << name;
    ++compared;
  }
  EXPECT_GT(compared, 10u);
  EXPECT_LT(fs::file_size(out + "/model.safetensors"), fs::file_size(src_ + "/model.safetensors"));

  const auto m = nlohmann::json::parse(std::ifstream(out + "/manifest.json"));
  size_t files = 0;
  for (const auto& e : fs::recursive_directory_iterator(out)) {
    if (!e.is_regular_file() || e.path().filename() == "manifest.json") continue;
    const std::string rel = fs::relative(e.path(), out).string();
    ASSERT_TRUE(m["files"].contains(rel)) << rel;
    EXPECT_EQ(m["files"][rel]["crc32"], zlib_crc_hex(e.path().string())) << rel;
    EXPECT_EQ(m["files"][rel]["bytes"].get<uint64_t>(), fs::file_size(e.path())) << rel;
    ++files;
  }
  EXPECT_EQ(m["files"].size(), files);
  EXPECT_TRUE(check_manifest(out).empty());
  // The export is a model the encoder loads, with the same embeddings to float16 precision.
  const auto ea = Encoder::load(src_)->encode({"the dog bit the man"});
  const auto eb = Encoder::load(out)->encode({"the dog bit the man"});
  double dot = 0;
  for (size_t i = 0; i < ea.dim; ++i) dot += double(ea.pooled[i]) * eb.pooled[i];
  EXPECT_GT(dot, 0.999);
}

TEST_F(ModelExport, ManifestCheckFindsTamperingMissingAndExtraFiles) {
  const std::string out = dir_ + "/out";
  export_model(src_, out);
  {
    std::fstream f(out + "/vocab.txt", std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(3);
    f.put('#');
  }
  fs::remove(out + "/config_sentence_transformers.json");
  std::ofstream(out + "/extra.txt") << "x";
  const auto problems = check_manifest(out);
  auto has = [&](const std::string& s) {
    return std::find(problems.begin(), problems.end(), s) != problems.end();
  };
  EXPECT_TRUE(has("vocab.txt: checksum differs")) << ::testing::PrintToString(problems);
  EXPECT_TRUE(has("config_sentence_transformers.json: missing"));
  EXPECT_TRUE(has("extra.txt: not in the manifest"));
  EXPECT_EQ(problems.size(), 3u);
  expect_error([&] { export_model(src_, out); }, "exists");
  // A manifest of the wrong shape is a sieve error naming it, not nlohmann's exception.
  std::ofstream(out + "/manifest.json") << R"({"format": 7, "version": 1, "files": {}})";
  expect_error([&] { check_manifest(out); }, "not a version-1 sieve manifest");
  std::ofstream(out + "/manifest.json") << R"({"format": "sieve-manifest", "version": 1, "files": {"vocab.txt": 3}})";
  expect_error([&] { check_manifest(out); }, "damaged manifest");
}

TEST_F(ModelExport, CliRebindsAVerifierToTheExportedEncoder) {
  VerifierConfig c;
  c.kind = VerifierKind::F4;
  c.encoder_dim = 32;
  c.max_tokens = 16;
  c.encoder_identity = model_identity(src_);
  const std::string vfile = dir_ + "/f4.safetensors";
  Verifier::create(c, 3)->save(vfile);
  const std::string out = dir_ + "/out";
  const auto r = run_command(cli_path() + " model export --in " + src_ + " --verifier " + vfile + " --out " + out +
                             " 2>&1");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  // The original refuses the exported encoder; the re-recorded copy accepts it, with the same weights.
  expect_error([&] { Verifier::load(vfile, model_identity(out)); }, "not for this one");
  auto v2 = Verifier::load(out + "/verifier.safetensors", model_identity(out));
  auto v1 = Verifier::load(vfile);
  EncodeCall call;
  call.token_states = true;
  const auto e = Encoder::load(out)->encode({"a red car", "a car that is red"}, call);
  EXPECT_FLOAT_EQ(v1->score(e.tokens[0], {&e.tokens[1]})[0], v2->score(e.tokens[0], {&e.tokens[1]})[0]);
  EXPECT_EQ(run_command(cli_path() + " model check " + out + " 2>&1").exit_code, 0);
}

TEST_F(ModelExport, CommandsUseSieveModelDirWhenNoModelIsGiven) {
  const auto with_flag = run_command(cli_path() + " embed -m " + src_ + " \"the dog bit the man\" 2>/dev/null");
  const auto by_env =
      run_command("SIEVE_MODEL_DIR=" + src_ + " " + cli_path() + " embed \"the dog bit the man\" 2>/dev/null");
  ASSERT_EQ(with_flag.exit_code, 0);
  ASSERT_EQ(by_env.exit_code, 0);
  EXPECT_EQ(by_env.out, with_flag.out);
}

}  // namespace
}  // namespace sieve::test
