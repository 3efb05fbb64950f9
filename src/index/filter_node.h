// The parsed form of a metadata filter (sieve/filter.h), shared by the per-document evaluator
// (Filter::matches) and the index's column evaluator (index/doc_state.cpp). Internal.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "sieve/filter.h"

namespace sieve {
namespace filter_detail {

using json = nlohmann::json;

// A filter operand: a string (with its instant when it is an RFC 3339 date), a number or a boolean.
struct Value {
  enum Type { Str, Num, Bool } type = Str;
  std::string s;
  double n = 0;
  bool b = false;
  bool date = false;
  double t = 0;  // the instant, when `date`
  json to_json() const {
    if (type == Num) return n;
    if (type == Bool) return b;
    return s;
  }
};

enum class Op { Eq, Ne, In, Nin, Gt, Gte, Lt, Lte, Exists };

inline const char* op_name(Op op) {
  switch (op) {
    case Op::Eq: return "$eq";
    case Op::Ne: return "$ne";
    case Op::In: return "$in";
    case Op::Nin: return "$nin";
    case Op::Gt: return "$gt";
    case Op::Gte: return "$gte";
    case Op::Lt: return "$lt";
    case Op::Lte: return "$lte";
    case Op::Exists: return "$exists";
  }
  return "$eq";
}

inline bool op_from_name(const std::string& name, Op* op) {
  for (Op o : {Op::Eq, Op::Ne, Op::In, Op::Nin, Op::Gt, Op::Gte, Op::Lt, Op::Lte, Op::Exists})
    if (name == op_name(o)) {
      *op = o;
      return true;
    }
  return false;
}

inline bool is_range(Op op) { return op == Op::Gt || op == Op::Gte || op == Op::Lt || op == Op::Lte; }

}  // namespace filter_detail

using filter_detail::Op;
using filter_detail::Value;

struct Filter::Node {
  enum Kind { All, And, Or, Not, Field } kind = All;
  std::vector<std::shared_ptr<const Node>> children;
  std::string field;
  Op op = Op::Eq;
  std::vector<Value> operands;
  bool exists = true;

  bool matches(const filter_detail::json& m) const {
    switch (kind) {
      case All: return true;
      case And:
        for (const auto& c : children)
          if (!c->matches(m)) return false;
        return true;
      case Or:
        for (const auto& c : children)
          if (c->matches(m)) return true;
        return false;
      case Not: return !children[0]->matches(m);
      case Field: return field_matches(m);
    }
    return false;
  }

  bool field_matches(const filter_detail::json& m) const {
    const auto it = m.is_object() ? m.find(field) : m.end();
    const bool present = m.is_object() && it != m.end();
    if (op == Op::Exists) return present == exists;
    if (!present) return op == Op::Ne || op == Op::Nin;
    const filter_detail::json& v = *it;
    auto any = [&](auto&& test) {
      if (!v.is_array()) return test(v);
      for (const filter_detail::json& e : v)
        if (test(e)) return true;
      return false;
    };
    switch (op) {
      case Op::Eq: return any([&](const filter_detail::json& e) { return equal(e, operands[0]); });
      case Op::Ne: return !any([&](const filter_detail::json& e) { return equal(e, operands[0]); });
      case Op::In:
        return any([&](const filter_detail::json& e) {
          return std::any_of(operands.begin(), operands.end(), [&](const Value& o) { return equal(e, o); });
        });
      case Op::Nin:
        return !any([&](const filter_detail::json& e) {
          return std::any_of(operands.begin(), operands.end(), [&](const Value& o) { return equal(e, o); });
        });
      default: return any([&](const filter_detail::json& e) { return in_range(e, operands[0]); });
    }
  }

  static bool equal(const filter_detail::json& e, const Value& o) {
    switch (o.type) {
      case Value::Num: return e.is_number() && e.get<double>() == o.n;
      case Value::Bool: return e.is_boolean() && e.get<bool>() == o.b;
      case Value::Str: {
        if (!e.is_string()) return false;
        const std::string& s = e.get_ref<const std::string&>();
        if (s == o.s) return true;
        double t;
        return o.date && parse_rfc3339(s, &t) && t == o.t;  // one instant, written two ways
      }
    }
    return false;
  }

  bool in_range(const filter_detail::json& e, const Value& o) const {
    double x;
    if (o.type == Value::Num) {
      if (!e.is_number()) return false;
      x = e.get<double>();
    } else {
      if (!e.is_string() || !parse_rfc3339(e.get_ref<const std::string&>(), &x)) return false;
    }
    const double bound = o.type == Value::Num ? o.n : o.t;
    switch (op) {
      case Op::Gt: return x > bound;
      case Op::Gte: return x >= bound;
      case Op::Lt: return x < bound;
      case Op::Lte: return x <= bound;
      default: return false;
    }
  }

  filter_detail::json to_json() const {
    switch (kind) {
      case All: return filter_detail::json::object();
      case And:
      case Or: {
        filter_detail::json a = filter_detail::json::array();
        for (const auto& c : children) a.push_back(c->to_json());
        return {{kind == And ? "$and" : "$or", a}};
      }
      case Not: return {{"$not", children[0]->to_json()}};
      case Field: {
        filter_detail::json operand;
        if (op == Op::Exists) {
          operand = exists;
        } else if (op == Op::In || op == Op::Nin) {
          operand = filter_detail::json::array();
          for (const Value& v : operands) operand.push_back(v.to_json());
        } else {
          operand = operands[0].to_json();
        }
        return {{field, {{filter_detail::op_name(op), operand}}}};
      }
    }
    return filter_detail::json::object();
  }

  void collect(std::set<std::string>& out) const {
    if (kind == Field) out.insert(field);
    for (const auto& c : children) c->collect(out);
  }
};

}  // namespace sieve
