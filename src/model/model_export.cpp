// Shipping a model folder: weights converted to float16 (optionally without the MLM head) and a
// manifest of every file's size and CRC-32, which `sieve model check` and the tests verify.
#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/checksum.h"
#include "core/file_util.h"
#include "sieve/error.h"
#include "sieve/model.h"
#include "sieve/safetensors.h"

namespace sieve {
namespace fs = std::filesystem;

namespace {

// Files of `dir`, relative, sorted, without the manifest itself.
std::vector<std::string> model_files(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file()) {
      std::string rel = fs::relative(e.path(), dir).string();
      if (rel != "manifest.json") out.push_back(rel);
    }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

void export_model(const std::string& from, const std::string& to, const ModelExportOptions& opt) {
  const ModelInfo info = read_model_info(from);  // fails early on a folder that is not a model
  SIEVE_THROW_IF_NOT(!fs::exists(to), "'" << to << "' exists; export writes a new folder");
  const std::string staged = to + ".partial";
  fs::remove_all(staged);
  fs::create_directories(staged);
  for (const auto& rel : model_files(from)) {
    if (path_join(from, rel) == info.weights_path || rel == "model.safetensors") continue;
    fs::create_directories(fs::path(path_join(staged, rel)).parent_path());
    // Copied by sieve's writer, whose errors name the file and say why (a full disk or file-size
    // limit shows as EFBIG/ENOSPC there, where std::filesystem::copy_file reports EIO).
    write_file_atomic(path_join(staged, rel), read_file(path_join(from, rel)));
  }
  auto st = SafetensorsFile::open(info.weights_path);
  std::vector<std::vector<uint16_t>> halves;
  std::vector<TensorToWrite> out;
  halves.reserve(st->names().size());
  for (const auto& name : st->names()) {
    const TensorView& t = st->get(name);
    // The MLM head is not used by an encoder: BertForMaskedLM's cls.*, RobertaForMaskedLM's
    // lm_head.*, ModernBertForMaskedLM's head.* and decoder.*.
    if (opt.drop_mlm_head) {
      bool head = false;
      for (const char* p : {"cls.", "lm_head.", "head.", "decoder."}) head = head || name.rfind(p, 0) == 0;
      if (head) continue;
    }
    TensorToWrite w{name, t.dtype, t.shape, t.data, t.nbytes};
    if (opt.fp16 && (t.dtype == DType::F32 || t.dtype == DType::F64 || t.dtype == DType::BF16)) {
      const std::vector<float> f = t.to_float();
      halves.emplace_back(f.size());
      for (size_t i = 0; i < f.size(); ++i) halves.back()[i] = float_to_half(f[i]);
      w.dtype = DType::F16;
      w.data = halves.back().data();
      w.nbytes = halves.back().size() * sizeof(uint16_t);
    }
    out.push_back(w);
  }
  write_safetensors(path_join(staged, "model.safetensors"), out, st->metadata());
  write_manifest(staged);
  fs::rename(staged, to);
}

nlohmann::json write_manifest(const std::string& dir) {
  nlohmann::json files = nlohmann::json::object();
  for (const auto& rel : model_files(dir)) {
    const std::string p = path_join(dir, rel);
    files[rel] = {{"bytes", fs::file_size(p)}, {"crc32", crc32_hex(crc32_file(p))}};
  }
  nlohmann::json m = {{"format", "sieve-manifest"}, {"version", 1}, {"files", files}};
  write_file_atomic(path_join(dir, "manifest.json"), m.dump(2) + "\n");
  return m;
}

std::vector<std::string> check_manifest(const std::string& dir) {
  const std::string path = path_join(dir, "manifest.json");
  SIEVE_THROW_IF_NOT(is_file(path), "no manifest.json in '" << dir << "'");
  nlohmann::json m;
  try {
    m = nlohmann::json::parse(read_file(path));
  } catch (const nlohmann::json::exception& e) {
    throw Error(path + ": not valid JSON (" + e.what() + ")");
  }
  SIEVE_THROW_IF_NOT(m.is_object() && m.contains("format") && m["format"] == "sieve-manifest" && m.contains("version") &&
                         m["version"] == 1 && m.contains("files") && m["files"].is_object(),
                     path << ": not a version-1 sieve manifest");
  std::vector<std::string> problems;
  const auto& files = m["files"];
  try {
    for (const auto& [rel, want] : files.items()) {
      const std::string p = path_join(dir, rel);
      if (!is_file(p)) {
        problems.push_back(rel + ": missing");
        continue;
      }
      if (fs::file_size(p) != want.at("bytes").get<uint64_t>()) problems.push_back(rel + ": size differs");
      else if (crc32_hex(crc32_file(p)) != want.at("crc32").get<std::string>()) problems.push_back(rel + ": checksum differs");
    }
  } catch (const nlohmann::json::exception& e) {
    throw Error(path + ": damaged manifest (" + e.what() + ")");
  }
  for (const auto& rel : model_files(dir))
    if (!files.contains(rel)) problems.push_back(rel + ": not in the manifest");
  return problems;
}

}  // namespace sieve
