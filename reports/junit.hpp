// report.xml: JUnit XML for CI test views, made from a report.json document (report.hpp). One
// <testcase> per case x variant (classname SUITE.VARIANT, name the case) with the metrics as
// properties; a correct variant with findings is a <failure> listing them (its message: the first
// finding with its detail and diagnosis), a case an external kernel's adapter failed on an
// <error>, a pair the run skipped a <skipped> with the reason. One <testcase> per mutant ("X is
// caught"): a <failure>
// when no case caught it; in a shard's report a <skipped> instead, since another shard may catch
// it (`mqacheck merge` judges coverage over all shards).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace mqa::reports {

std::string junit_xml(const nlohmann::json& report);

}  // namespace mqa::reports
