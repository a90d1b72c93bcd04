// runtime/eval/categories.cpp: the subject -> category tables, as data.
//
// Sources (each table transcribed from the benchmark's own repository):
//   C-Eval: hkust-nlp/ceval subject_mapping.json ([English name, Chinese name, category]).
//     One revision of that file omits the category of clinical_medicine; the other says
//     "Other", which also makes the paper's counts (STEM 20, Social Science 10,
//     Humanities 11, Other 11).
//   CMMLU: haonan-li/CMMLU src/categories.py (name_en2zh, subcategories, categories). A
//     subject's subcategories map to categories; the first gives `category`, and the 15
//     subjects with the subcategory "china specific" also count in "China specific", as
//     the official scorer (src/mp_utils.py get_results) counts them.
//   MMLU: hendrycks/test categories.py (subcategories -> STEM, humanities, social sciences,
//     "other (business, health, misc.)"), names shortened to STEM, Humanities,
//     Social Sciences, Other.
#include "runtime/eval/categories.h"

#include <algorithm>

namespace ltrun::eval {
namespace {

const std::vector<Subject> kCeval = {
    {"computer_network", "计算机网络", "STEM", ""},
    {"operating_system", "操作系统", "STEM", ""},
    {"computer_architecture", "计算机组成", "STEM", ""},
    {"college_programming", "大学编程", "STEM", ""},
    {"college_physics", "大学物理", "STEM", ""},
    {"college_chemistry", "大学化学", "STEM", ""},
    {"advanced_mathematics", "高等数学", "STEM", ""},
    {"probability_and_statistics", "概率统计", "STEM", ""},
    {"discrete_mathematics", "离散数学", "STEM", ""},
    {"electrical_engineer", "注册电气工程师", "STEM", ""},
    {"metrology_engineer", "注册计量师", "STEM", ""},
    {"high_school_mathematics", "高中数学", "STEM", ""},
    {"high_school_physics", "高中物理", "STEM", ""},
    {"high_school_chemistry", "高中化学", "STEM", ""},
    {"high_school_biology", "高中生物", "STEM", ""},
    {"middle_school_mathematics", "初中数学", "STEM", ""},
    {"middle_school_biology", "初中生物", "STEM", ""},
    {"middle_school_physics", "初中物理", "STEM", ""},
    {"middle_school_chemistry", "初中化学", "STEM", ""},
    {"veterinary_medicine", "兽医学", "STEM", ""},
    {"college_economics", "大学经济学", "Social Science", ""},
    {"business_administration", "工商管理", "Social Science", ""},
    {"marxism", "马克思主义基本原理", "Social Science", ""},
    {"mao_zedong_thought", "毛泽东思想和中国特色社会主义理论体系概论", "Social Science", ""},
    {"education_science", "教育学", "Social Science", ""},
    {"teacher_qualification", "教师资格", "Social Science", ""},
    {"high_school_politics", "高中政治", "Social Science", ""},
    {"high_school_geography", "高中地理", "Social Science", ""},
    {"middle_school_politics", "初中政治", "Social Science", ""},
    {"middle_school_geography", "初中地理", "Social Science", ""},
    {"modern_chinese_history", "近代史纲要", "Humanities", ""},
    {"ideological_and_moral_cultivation", "思想道德修养与法律基础", "Humanities", ""},
    {"logic", "逻辑学", "Humanities", ""},
    {"law", "法学", "Humanities", ""},
    {"chinese_language_and_literature", "中国语言文学", "Humanities", ""},
    {"art_studies", "艺术学", "Humanities", ""},
    {"professional_tour_guide", "导游资格", "Humanities", ""},
    {"legal_professional", "法律职业资格", "Humanities", ""},
    {"high_school_chinese", "高中语文", "Humanities", ""},
    {"high_school_history", "高中历史", "Humanities", ""},
    {"middle_school_history", "初中历史", "Humanities", ""},
    {"civil_servant", "公务员", "Other", ""},
    {"sports_science", "体育学", "Other", ""},
    {"plant_protection", "植物保护", "Other", ""},
    {"basic_medicine", "基础医学", "Other", ""},
    {"clinical_medicine", "临床医学", "Other", ""},
    {"urban_and_rural_planner", "注册城乡规划师", "Other", ""},
    {"accountant", "注册会计师", "Other", ""},
    {"fire_engineer", "注册消防工程师", "Other", ""},
    {"environmental_impact_assessment_engineer", "环境影响评价工程师", "Other", ""},
    {"tax_accountant", "税务师", "Other", ""},
    {"physician", "医师资格", "Other", ""},
};

constexpr std::string_view kChina = "China specific";

const std::vector<Subject> kCmmlu = {
    {"agronomy", "农学", "Other", ""},
    {"anatomy", "解剖学", "STEM", ""},
    {"ancient_chinese", "古汉语", "Social Science", kChina},
    {"arts", "艺术学", "Humanities", ""},
    {"astronomy", "天文学", "STEM", ""},
    {"business_ethics", "商业伦理", "Social Science", ""},
    {"chinese_civil_service_exam", "中国公务员考试", "Social Science", kChina},
    {"chinese_driving_rule", "中国驾驶规则", "Other", kChina},
    {"chinese_food_culture", "中国饮食文化", "Social Science", kChina},
    {"chinese_foreign_policy", "中国外交政策", "Social Science", kChina},
    {"chinese_history", "中国历史", "Humanities", kChina},
    {"chinese_literature", "中国文学", "Humanities", kChina},
    {"chinese_teacher_qualification", "中国教师资格", "Social Science", kChina},
    {"clinical_knowledge", "临床知识", "Other", ""},
    {"college_actuarial_science", "大学精算学", "STEM", ""},
    {"college_education", "大学教育学", "Social Science", ""},
    {"college_engineering_hydrology", "大学工程水文学", "STEM", ""},
    {"college_law", "大学法律", "Humanities", ""},
    {"college_mathematics", "大学数学", "STEM", ""},
    {"college_medical_statistics", "大学医学统计", "STEM", ""},
    {"college_medicine", "大学医学", "Other", ""},
    {"computer_science", "计算机科学", "STEM", ""},
    {"computer_security", "计算机安全", "Other", ""},
    {"conceptual_physics", "概念物理学", "STEM", ""},
    {"construction_project_management", "建设工程管理", "Other", kChina},
    {"economics", "经济学", "Social Science", ""},
    {"education", "教育学", "Social Science", ""},
    {"electrical_engineering", "电气工程", "STEM", ""},
    {"elementary_chinese", "小学语文", "Social Science", kChina},
    {"elementary_commonsense", "小学常识", "Other", kChina},
    {"elementary_information_and_technology", "小学信息技术", "Other", ""},
    {"elementary_mathematics", "初等数学", "STEM", ""},
    {"ethnology", "民族学", "Social Science", kChina},
    {"food_science", "食品科学", "Other", ""},
    {"genetics", "遗传学", "STEM", ""},
    {"global_facts", "全球事实", "Humanities", ""},
    {"high_school_biology", "高中生物", "STEM", ""},
    {"high_school_chemistry", "高中化学", "STEM", ""},
    {"high_school_geography", "高中地理", "Social Science", ""},
    {"high_school_mathematics", "高中数学", "STEM", ""},
    {"high_school_physics", "高中物理学", "STEM", ""},
    {"high_school_politics", "高中政治", "Social Science", kChina},
    {"human_sexuality", "人类性行为", "Other", ""},
    {"international_law", "国际法学", "Humanities", ""},
    {"journalism", "新闻学", "Social Science", ""},
    {"jurisprudence", "法理学", "Humanities", ""},
    {"legal_and_moral_basis", "法律与道德基础", "Other", ""},
    {"logical", "逻辑学", "Humanities", ""},
    {"machine_learning", "机器学习", "STEM", ""},
    {"management", "管理学", "Social Science", ""},
    {"marketing", "市场营销", "Social Science", ""},
    {"marxist_theory", "马克思主义理论", "Humanities", ""},
    {"modern_chinese", "现代汉语", "Social Science", kChina},
    {"nutrition", "营养学", "Other", ""},
    {"philosophy", "哲学", "Humanities", ""},
    {"professional_accounting", "专业会计", "Social Science", ""},
    {"professional_law", "专业法学", "Humanities", ""},
    {"professional_medicine", "专业医学", "Other", ""},
    {"professional_psychology", "专业心理学", "Social Science", ""},
    {"public_relations", "公共关系", "Social Science", ""},
    {"security_study", "安全研究", "Social Science", ""},
    {"sociology", "社会学", "Social Science", ""},
    {"sports_science", "体育学", "Other", ""},
    {"traditional_chinese_medicine", "中医中药", "Other", kChina},
    {"virology", "病毒学", "STEM", ""},
    {"world_history", "世界历史", "Humanities", ""},
    {"world_religions", "世界宗教", "Humanities", ""},
};

const std::vector<Subject> kMmlu = {
    {"abstract_algebra", "", "STEM", ""},
    {"anatomy", "", "Other", ""},
    {"astronomy", "", "STEM", ""},
    {"business_ethics", "", "Other", ""},
    {"clinical_knowledge", "", "Other", ""},
    {"college_biology", "", "STEM", ""},
    {"college_chemistry", "", "STEM", ""},
    {"college_computer_science", "", "STEM", ""},
    {"college_mathematics", "", "STEM", ""},
    {"college_medicine", "", "Other", ""},
    {"college_physics", "", "STEM", ""},
    {"computer_security", "", "STEM", ""},
    {"conceptual_physics", "", "STEM", ""},
    {"econometrics", "", "Social Sciences", ""},
    {"electrical_engineering", "", "STEM", ""},
    {"elementary_mathematics", "", "STEM", ""},
    {"formal_logic", "", "Humanities", ""},
    {"global_facts", "", "Other", ""},
    {"high_school_biology", "", "STEM", ""},
    {"high_school_chemistry", "", "STEM", ""},
    {"high_school_computer_science", "", "STEM", ""},
    {"high_school_european_history", "", "Humanities", ""},
    {"high_school_geography", "", "Social Sciences", ""},
    {"high_school_government_and_politics", "", "Social Sciences", ""},
    {"high_school_macroeconomics", "", "Social Sciences", ""},
    {"high_school_mathematics", "", "STEM", ""},
    {"high_school_microeconomics", "", "Social Sciences", ""},
    {"high_school_physics", "", "STEM", ""},
    {"high_school_psychology", "", "Social Sciences", ""},
    {"high_school_statistics", "", "STEM", ""},
    {"high_school_us_history", "", "Humanities", ""},
    {"high_school_world_history", "", "Humanities", ""},
    {"human_aging", "", "Other", ""},
    {"human_sexuality", "", "Social Sciences", ""},
    {"international_law", "", "Humanities", ""},
    {"jurisprudence", "", "Humanities", ""},
    {"logical_fallacies", "", "Humanities", ""},
    {"machine_learning", "", "STEM", ""},
    {"management", "", "Other", ""},
    {"marketing", "", "Other", ""},
    {"medical_genetics", "", "Other", ""},
    {"miscellaneous", "", "Other", ""},
    {"moral_disputes", "", "Humanities", ""},
    {"moral_scenarios", "", "Humanities", ""},
    {"nutrition", "", "Other", ""},
    {"philosophy", "", "Humanities", ""},
    {"prehistory", "", "Humanities", ""},
    {"professional_accounting", "", "Other", ""},
    {"professional_law", "", "Humanities", ""},
    {"professional_medicine", "", "Other", ""},
    {"professional_psychology", "", "Social Sciences", ""},
    {"public_relations", "", "Social Sciences", ""},
    {"security_studies", "", "Social Sciences", ""},
    {"sociology", "", "Social Sciences", ""},
    {"us_foreign_policy", "", "Social Sciences", ""},
    {"virology", "", "Other", ""},
    {"world_religions", "", "Humanities", ""},
};

}  // namespace

const std::vector<Subject>& subjects(std::string_view bench) {
  static const std::vector<Subject> none;
  if (bench == "ceval") return kCeval;
  if (bench == "cmmlu") return kCmmlu;
  if (bench == "mmlu") return kMmlu;
  return none;
}

const Subject* find_subject(std::string_view bench, std::string_view subject) {
  const auto& list = subjects(bench);
  auto it = std::find_if(list.begin(), list.end(),
                         [&](const Subject& s) { return s.name == subject; });
  return it == list.end() ? nullptr : &*it;
}

std::string category_of(std::string_view bench, std::string_view subject) {
  const Subject* s = find_subject(bench, subject);
  return s ? std::string(s->category) : std::string();
}

std::vector<std::string> categories_of(std::string_view bench, std::string_view subject) {
  std::vector<std::string> out;
  if (const Subject* s = find_subject(bench, subject)) {
    out.emplace_back(s->category);
    if (!s->also.empty()) out.emplace_back(s->also);
  }
  return out;
}

std::vector<std::string> category_names(std::string_view bench) {
  if (bench == "ceval") return {"STEM", "Social Science", "Humanities", "Other"};
  if (bench == "cmmlu") return {"STEM", "Humanities", "Social Science", "Other", "China specific"};
  if (bench == "mmlu") return {"STEM", "Humanities", "Social Sciences", "Other"};
  return {};
}

}  // namespace ltrun::eval
