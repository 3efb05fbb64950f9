// sieve._sieve, the serving half: what python/sieve/ray_serve.py builds Ray Serve deployments
// from. A shard replica answers with ShardServer (one shard's dense lists, keys and token
// states); the router runs the library's own Service (the JSON API of `sieve serve`) over the
// shard set, its shards reached through a Python object (PyShardRemote), so that the merge, the
// fusion and stage 2 are the library's and not a second implementation.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "index/shard_set.h"
#include "serve/admission.h"
#include "serve/service.h"
#include "serve/shard_service.h"
#include "sieve/error.h"
#include "sieve/index.h"
#include "sieve/shard_scorer.h"
#include "sieve/verify.h"

namespace py = pybind11;
using namespace sieve;

namespace {

using index::Ranked;

// A Python object with dense_lists(shard, pooled, depth, ef_search, nprobe, timeout_s), tokens(shard,
// docs, max_rows, timeout_s), keys(shard, docs, timeout_s) and, when its attribute scores_at_shards is true, scores(shard,
// verifier, query, query_ids, docs, timeout_s) (ray_serve._RemoteShards), as the library's
// ShardRemote. timeout_s: the seconds the request has left (None: no deadline). Each call takes the
// GIL (the Python side waits on its shard without it); a Python exception becomes ShardUnavailable
// (the server's 503).
class PyShardRemote final : public ShardRemote {
 public:
  explicit PyShardRemote(py::object target)
      : target_(std::move(target)), scores_(py::bool_(py::getattr(target_, "scores_at_shards", py::bool_(false)))) {}
  ~PyShardRemote() override {
    py::gil_scoped_acquire gil;
    target_ = py::object();
  }

  std::vector<Ranked> dense_lists(size_t shard, const std::string& identity, size_t n, size_t dim, const float* pooled,
                                  size_t depth, const SearchParams& p) const override {
    py::gil_scoped_acquire gil;
    return guarded(shard, [&] {
      py::array_t<float> q({static_cast<py::ssize_t>(n), static_cast<py::ssize_t>(dim)});
      std::copy(pooled, pooled + n * dim, q.mutable_data());
      // The filter and the expiry clock go along only when set (the shard computes deletions
      // and expiry itself), so that a remote written before filters still answers plain searches.
      py::list lists = p.filter.empty() && p.now == 0
                           ? target_.attr("dense_lists")(shard, q, depth, p.ef_search, p.nprobe, timeout_of(p.deadline),
                                                         py::arg("expect") = identity)
                           : target_.attr("dense_lists")(shard, q, depth, p.ef_search, p.nprobe, timeout_of(p.deadline),
                                                         py::arg("filter") = p.filter.to_json(), py::arg("now") = p.now,
                                                         py::arg("expect") = identity);
      std::vector<Ranked> out;
      for (py::handle item : lists) {
        auto pair = item.cast<py::tuple>();
        auto ids = pair[0].cast<py::array_t<int64_t, py::array::c_style | py::array::forcecast>>();
        auto scores = pair[1].cast<py::array_t<double, py::array::c_style | py::array::forcecast>>();
        if (ids.size() != scores.size()) throw ShardUnavailable("ids and scores of different lengths");
        Ranked r;
        for (py::ssize_t j = 0; j < ids.size(); ++j) {
          if (ids.data()[j] < 0) throw ShardUnavailable("a negative document id");
          if (!std::isfinite(scores.data()[j]))  // the merge sorts by score: NaN breaks its ordering
            throw ShardUnavailable("a non-finite score (" + std::to_string(scores.data()[j]) + ")");
          r.emplace_back(static_cast<uint32_t>(ids.data()[j]), scores.data()[j]);
        }
        out.push_back(std::move(r));
      }
      return out;
    }, p.deadline);
  }

  std::vector<TokenStates> tokens(size_t shard, const std::string& identity, const std::vector<uint32_t>& docs,
                                  size_t max_rows, std::chrono::steady_clock::time_point deadline) const override {
    py::gil_scoped_acquire gil;
    return guarded(shard, [&] {
      py::list got = target_.attr("tokens")(shard, docs, max_rows, timeout_of(deadline), py::arg("expect") = identity);
      std::vector<TokenStates> out;
      for (py::handle item : got) {
        auto a = item.cast<py::array_t<float, py::array::c_style | py::array::forcecast>>();
        if (a.ndim() != 2) throw ShardUnavailable("token states that are not a matrix");
        TokenStates t;
        t.length = static_cast<size_t>(a.shape(0));
        t.values.assign(a.data(), a.data() + a.size());
        out.push_back(std::move(t));
      }
      return out;
    }, deadline);
  }

  std::vector<float> scores(size_t shard, const std::string& identity, const std::string& verifier,
                            const TokenStates& query, const std::vector<uint32_t>& docs,
                            std::chrono::steady_clock::time_point deadline) const override {
    py::gil_scoped_acquire gil;
    return guarded(shard, [&] {
      const auto dim = static_cast<py::ssize_t>(query.length ? query.values.size() / query.length : 0);
      py::array_t<float> q({static_cast<py::ssize_t>(query.length), dim});
      std::copy(query.values.begin(), query.values.end(), q.mutable_data());
      auto a = target_.attr("scores")(shard, verifier, q, query.ids, docs, timeout_of(deadline),
                                      py::arg("expect") = identity)
                   .cast<py::array_t<float, py::array::c_style | py::array::forcecast>>();
      return std::vector<float>(a.data(), a.data() + a.size());
    }, deadline);
  }
  bool scores_at_shards() const override { return scores_; }

  std::vector<float> keys(size_t shard, const std::string& identity, const std::vector<uint32_t>& docs,
                          std::chrono::steady_clock::time_point deadline) const override {
    py::gil_scoped_acquire gil;
    return guarded(shard, [&] {
      auto a = target_.attr("keys")(shard, docs, timeout_of(deadline), py::arg("expect") = identity)
                   .cast<py::array_t<float, py::array::c_style | py::array::forcecast>>();
      return std::vector<float>(a.data(), a.data() + a.size());
    }, deadline);
  }

 private:
  // Seconds left until `deadline` (None: no deadline), for the Python side's own wait.
  static py::object timeout_of(std::chrono::steady_clock::time_point deadline) {
    if (deadline == std::chrono::steady_clock::time_point::max()) return py::none();
    return py::float_(std::max(0.0, std::chrono::duration<double>(deadline - std::chrono::steady_clock::now()).count()));
  }
  // A Python exception becomes ShardUnavailable; a timeout of the wait cut to the request's
  // deadline (timeout_of) is ShardTimeout, as the library's own wait at the deadline says.
  template <class Fn>
  auto guarded(size_t shard, Fn&& fn,
               std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max()) const
      -> decltype(fn()) {
    try {
      return fn();
    } catch (py::error_already_set& e) {
      if (e.matches(PyExc_TimeoutError) && std::chrono::steady_clock::now() >= deadline - std::chrono::milliseconds(50))
        throw ShardTimeout("shard " + std::to_string(shard) + " had not answered when the request's deadline passed");
      throw ShardUnavailable("shard " + std::to_string(shard) + " did not answer: " + std::string(e.what()));
    } catch (const py::cast_error& e) {
      throw ShardUnavailable("shard " + std::to_string(shard) + " answered in an unexpected form: " + e.what());
    } catch (const ShardUnavailable& e) {
      throw ShardUnavailable("shard " + std::to_string(shard) + ": " + e.what());
    }
  }

  py::object target_;
  bool scores_;  // target.scores_at_shards, read once
};

// One shard of a set, as a Ray shard replica answers it: the library's ShardService (the same
// one `sieve shard serve` runs), with NumPy arrays in and out.
class ShardServer {
 public:
  // `verifiers`: the router's stage-2 specs; `model`: the encoder's folder they are checked
  // against (default: the shard's).
  ShardServer(const std::string& dir, const std::vector<std::string>& verifiers, const std::string& model)
      : s_(dir, verifiers, model) {}

  // Stage 2 here (ShardScorer::score).
  py::array_t<float> scores(const std::string& key, py::array_t<float, py::array::c_style | py::array::forcecast> query,
                            const std::vector<int32_t>& query_ids, const std::vector<uint32_t>& docs,
                            const std::string& expect) const {
    const size_t dim = s_.dim();
    SIEVE_THROW_IF_NOT(query.ndim() == 2 && static_cast<size_t>(query.shape(1)) == dim,
                       "the query's token states must be an n x " << dim << " array");
    TokenStates q;
    q.length = static_cast<size_t>(query.shape(0));
    q.values.assign(query.data(), query.data() + query.size());
    q.ids = query_ids;
    std::vector<float> out;
    {
      py::gil_scoped_release nogil;
      out = s_.scores(expect, key, q, docs);
    }
    py::array_t<float> a(static_cast<py::ssize_t>(out.size()));
    std::copy(out.begin(), out.end(), a.mutable_data());
    return a;
  }

  std::vector<std::string> verifier_keys() const { return s_.verifier_keys(); }

  py::list dense_lists(py::array_t<float, py::array::c_style | py::array::forcecast> pooled, size_t depth,
                       int ef_search, int nprobe, const std::string& filter, double now, const std::string& expect) const {
    SIEVE_THROW_IF_NOT(pooled.ndim() == 2 && static_cast<size_t>(pooled.shape(1)) == s_.dim(),
                       "pooled keys must be an n x " << s_.dim() << " array");
    SearchParams p;
    p.ef_search = ef_search;
    p.nprobe = nprobe;
    p.filter = Filter::parse(filter);
    p.now = now;
    const size_t n = static_cast<size_t>(pooled.shape(0));
    std::vector<Ranked> lists;
    {
      py::gil_scoped_release nogil;
      lists = s_.dense_lists(expect, n, pooled.data(), depth, p);
    }
    py::list out;
    for (const Ranked& r : lists) {
      py::array_t<int64_t> ids(static_cast<py::ssize_t>(r.size()));
      py::array_t<double> scores(static_cast<py::ssize_t>(r.size()));
      for (size_t j = 0; j < r.size(); ++j) {
        ids.mutable_data()[j] = r[j].first;
        scores.mutable_data()[j] = r[j].second;
      }
      out.append(py::make_tuple(ids, scores));
    }
    return out;
  }

  py::list tokens(const std::vector<uint32_t>& docs, size_t max_rows, const std::string& expect) const {
    std::vector<TokenStates> got;
    {
      py::gil_scoped_release nogil;
      got = s_.tokens(expect, docs, max_rows);
    }
    const auto dim = static_cast<py::ssize_t>(s_.dim());
    py::list out;
    for (const TokenStates& t : got) {
      py::array_t<float> a({static_cast<py::ssize_t>(t.length), dim});
      std::copy(t.values.begin(), t.values.end(), a.mutable_data());
      out.append(a);
    }
    return out;
  }

  py::array_t<float> keys(const std::vector<uint32_t>& docs, const std::string& expect) const {
    const std::vector<float> k = s_.keys(expect, docs);
    py::array_t<float> a({static_cast<py::ssize_t>(docs.size()), static_cast<py::ssize_t>(s_.dim())});
    std::copy(k.begin(), k.end(), a.mutable_data());
    return a;
  }

  size_t size() const { return s_.size(); }

  // The identity of the latest copy this replica opened (index::shard_identity).
  std::string identity() const { return s_.identity(); }
  // sieve.Error unless this replica can answer for copy `expected` ("" = any).
  void check_identity(const std::string& expected) const { s_.size(expected); }

 private:
  serve::ShardService s_;
};

}  // namespace

// A service answer as Python sees it: (status, body bytes, content type, [(header, value)]).
py::tuple answer_tuple(const serve::Response& r) {
  return py::make_tuple(r.status, py::bytes(r.body), r.content_type, r.headers);
}

// Deletes a Service without holding the GIL: a shard set served elsewhere waits, as it goes, for
// its shard calls under way (index/fan_out.h), and those need the GIL to finish.
struct DeleteWithoutGil {
  void operator()(serve::Service* s) const {
    if (PyGILState_Check()) {
      py::gil_scoped_release nogil;
      delete s;
    } else {
      delete s;
    }
  }
};
using ServiceHolder = std::unique_ptr<serve::Service, DeleteWithoutGil>;

void bind_serving(py::module_& m) {
  // Admission (keys, scopes, limits, the body cap): `sieve serve`'s, for Ray Serve's router.
  py::class_<serve::Admission>(m, "Admission")
      .def(py::init([](const std::string& api_key_file, const std::string& api_key, double rate, double burst,
                       size_t concurrent, size_t max_body, size_t refusal_delay_ms, size_t refusals_held,
                       size_t refusals_held_total, size_t request_threads) {
             serve::AdmissionOptions o;
             if (!api_key_file.empty()) o.api_keys = serve::read_api_keys(api_key_file);
             o.api_key = api_key;
             o.limits = {rate, burst, concurrent};
             o.max_body = max_body;
             o.refusal_delay_ms = refusal_delay_ms;
             o.refusals_held = refusals_held;
             o.refusals_held_total = refusals_held_total;
             return std::make_unique<serve::Admission>(o, request_threads);
           }),
           py::arg("api_key_file") = "", py::arg("api_key") = "", py::arg("rate") = 0.0, py::arg("burst") = 0.0,
           py::arg("concurrent") = 0, py::arg("max_body") = size_t{16u << 20}, py::arg("refusal_delay_ms") = 1000,
           py::arg("refusals_held") = 16, py::arg("refusals_held_total") = 0, py::arg("request_threads") = 64)
      .def(
          "body_refusal",
          [](const serve::Admission& a, size_t bytes) -> py::object {
            auto r = a.body_refusal(bytes);
            return r ? py::object(answer_tuple(*r)) : py::object(py::none());
          },
          py::arg("bytes"), "The 413 answer for a body of that many bytes over the cap, else None.")
      .def(
          "admit",
          [](serve::Admission& a, const std::string& method, const std::string& path, const std::string& authorization,
             const std::string& address) {
            serve::AdmissionVerdict v = a.admit(method, path, authorization, address);
            py::object refusal = v.refusal ? py::object(answer_tuple(*v.refusal)) : py::object(py::none());
            const bool place = v.ticket.held();
            v.ticket.hand_over();
            return py::make_tuple(refusal, v.hold_seconds, v.client, place);
          },
          py::arg("method"), py::arg("path"), py::arg("authorization") = "", py::arg("address") = "",
          "(refusal, hold_seconds, client, in_flight): refusal is None or the 401 / 403 / 429 answer; a 429 "
          "with hold_seconds > 0 is answered after that long, then end_hold(client); an admitted "
          "request with in_flight true holds a place until release(client), once it is answered.")
      .def("release", &serve::Admission::release, py::arg("client"))
      .def("end_hold", &serve::Admission::end_hold, py::arg("client"))
      .def("in_flight", &serve::Admission::in_flight, py::arg("client"));
  m.def("client_address", &serve::client_address, py::arg("peer"), py::arg("header_last") = py::none(),
        "The address a request's limits count: the trusted proxy header's last value's rightmost address when "
        "it holds one, else the peer's (sieve serve's rule).");

  py::class_<ShardServer>(m, "ShardServer")
      .def(py::init<const std::string&, const std::vector<std::string>&, const std::string&>(), py::arg("path"),
           py::arg("verifiers") = std::vector<std::string>{}, py::arg("model") = "")
      .def("scores", &ShardServer::scores, py::arg("verifier"), py::arg("query"), py::arg("query_ids"), py::arg("docs"),
           py::arg("expect") = "")
      .def("verifier_keys", &ShardServer::verifier_keys)
      .def("dense_lists", &ShardServer::dense_lists, py::arg("pooled"), py::arg("depth"), py::arg("ef_search") = 0,
           py::arg("nprobe") = 0, py::arg("filter") = "", py::arg("now") = 0.0, py::arg("expect") = "")
      .def("tokens", &ShardServer::tokens, py::arg("docs"), py::arg("max_rows"), py::arg("expect") = "")
      .def("keys", &ShardServer::keys, py::arg("docs"), py::arg("expect") = "")
      .def_property_readonly("identity", &ShardServer::identity)
      .def("check_identity", &ShardServer::check_identity, py::arg("expected"),
           "sieve.Error unless this replica can answer for the copy `expected` (the router's record of this shard; "
           "'' = any): the one it serves, or one its set committed since.")
      .def("__len__", &ShardServer::size);
  m.def("shard_set_identities", &index::shard_set_identities, py::arg("path"),
        "Each shard's identity as the shard set at `path` records it, in shard order.");

  py::class_<serve::Service, ServiceHolder>(m, "Service")
      .def(py::init([](const std::string& index, const std::string& model, const std::string& verifier,
                       py::object remote, int threads, size_t workers, size_t search_slots, size_t request_timeout_ms) {
             serve::ServeOptions o;
             o.index_dir = index;
             o.model_dir = model;
             o.verifier = verifier;
             o.encoder.threads = threads;
             o.encoder_workers = workers;
             o.search_slots = search_slots;
             o.request_timeout_ms = request_timeout_ms;
             if (!remote.is_none()) o.remote = std::make_shared<PyShardRemote>(remote);
             py::gil_scoped_release nogil;
             serve::check_serve_options(o);
             return ServiceHolder(new serve::Service(o));
           }),
           py::arg("index") = "", py::arg("model") = "", py::arg("verifier") = "", py::arg("remote") = py::none(),
           py::arg("threads") = 0, py::arg("workers") = 0, py::arg("search_slots") = 0,
           py::arg("request_timeout_ms") = 0)
      .def(
          "handle",
          [](serve::Service& s, const std::string& method, const std::string& path, const py::bytes& body,
             const std::map<std::string, std::string>& query, double waited_s) {
            SIEVE_THROW_IF_NOT(std::isfinite(waited_s) && waited_s >= 0,
                               "waited_s must be a number of seconds >= 0 (got " << waited_s << ")");
            std::string b = body;
            serve::Response r;
            {
              py::gil_scoped_release nogil;
              // The request's clock (its deadline) starts when it arrived, not when a thread took it up.
              const auto arrived = std::chrono::steady_clock::now() -
                                   std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                       std::chrono::duration<double>(waited_s));
              r = s.handle(method, path, b, query, arrived);
            }
            return py::make_tuple(r.status, py::bytes(r.body), r.content_type, r.headers);
          },
          py::arg("method"), py::arg("path"), py::arg("body") = py::bytes(), py::arg("query") = std::map<std::string, std::string>{},
          py::arg("waited_s") = 0.0,
          "(status, body, content type, headers). waited_s: how long the request had already waited since it "
          "arrived (in a queue, for a thread): its timeout_ms counts from its arrival.");
}
