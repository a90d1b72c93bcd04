// runtime/rl/gigpo.h: GiGPO's advantages (Feng et al. 2025, "Group-in-Group Policy Optimization
// for LLM Agent Training", arXiv 2505.10978) for one group of episodes of one task, and GRPO on
// episodes as its baseline. Plain numbers: no model, no tokens, no Lua; the caller broadcasts a
// step's advantage over that step's action tokens.
//
// Notation: a group of N episodes tau_1..tau_N of one task from the same initial state (same
// seed); episode i has T_i >= 1 steps; step t was taken in the state whose anchor key (the
// observation text, or any key the environment gives) is s_t^(i) and earned reward r_t^(i).
//   R(tau_i)   = sum_t r_t^(i)                                   episode return
//   A_E(tau_i) = (R(tau_i) - mean_j R(tau_j)) / F({R(tau_j)})   episode relative advantage (Eq. 3)
//   R_t^(i)    = sum_{k >= t} gamma^(k - t) r_k^(i)              discounted return from step t (Eq. 5)
//   G(s)       = {(i, t) : s_t^(i) = s}                          anchor-state group (Eq. 6)
//   A_S(i, t)  = (R_t^(i) - mean_G(s) R) / F(G(s))               step relative advantage (Eq. 7)
//   A(i, t)    = A_E(tau_i) + omega * A_S(i, t)                  the advantage of step t (Eq. 8)
// F (the paper's F_norm) is AdvNorm::Std: the unbiased sample std (as torch.std) + eps, or
// AdvNorm::None: 1 (loss.h). G(s) spans all episodes of the group and keeps repeated visits of
// s within one episode, as verl-agent's build_step_group does (exact key equality; its optional
// similarity clustering is not built). A group whose values are all equal gets 0; a singleton
// anchor group gets A_S = 0 (verl-agent: mean = its own return, std = 1).
//
// Where this differs from verl-agent's code (core_gigpo.py), on purpose:
// - A_E's mean and std are over the N episodes (the paper's Eq. 3). verl-agent by default
//   (compute_mean_std_cross_steps) takes them over the steps, each step carrying its episode's
//   return, which weights long episodes more.
// - N = 1: AdvNorm::None gives A_E = 0 and Std is an error (as loss.h's advantages); verl-agent
//   passes R through (mean 0, std 1 for a lone episode).
// Defaults: gamma 0.95 and omega 1 (the paper's settings); norm None (the default mode
// mean_norm of verl-agent's compute_gigpo_outcome_advantage; Std is its mean_std_norm).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/core/fields.h"
#include "runtime/rl/loss.h"

namespace ltrun::rl {

// One episode: per step, the anchor key of the state the action was taken in, and the reward.
// The two lists have one entry per step (an error names the episode when they do not).
struct Episode {
  std::vector<std::string> anchors;
  std::vector<double> rewards;
};

struct GigpoOptions {
  double gamma = 0.95;  // discount of the step returns, in [0, 1]
  double omega = 1.0;   // weight of A_S; 0: GRPO on episodes (A = A_E)
  AdvNorm norm = AdvNorm::None;
  double eps = 1e-6;    // added to the std (norm Std), >= 0
};

// gamma, omega, eps by key (runtime/core/fields.h); norm is parse_adv_norm's.
const Fields<GigpoOptions>& gigpo_option_fields();

struct GigpoAdvantages {
  std::vector<double> episode_return;  // R(tau_i)
  std::vector<double> episode;         // A_E(tau_i)
  // per episode, per step:
  std::vector<std::vector<double>> returns;     // R_t^(i)
  std::vector<std::vector<double>> step;        // A_S(i, t)
  std::vector<std::vector<double>> advantage;   // A(i, t)
  std::vector<std::vector<int64_t>> anchor_group;  // the step's anchor group, 0-based, numbered
                                                   // by first appearance (episode, then step)
  std::vector<int64_t> group_size;     // per anchor group: its number of steps
};

// All of the above for one group. Errors (prefix "rl.gigpo:"): an empty group, an episode with
// no steps or with anchors and rewards of different lengths, a non-finite reward (naming the
// episode and step, 1-based), gamma outside [0, 1], a non-finite omega, eps < 0, and norm Std
// with a single episode.
GigpoAdvantages gigpo_advantages(const std::vector<Episode>& group, const GigpoOptions& o = {});

// GRPO on episodes, the baseline: A_E(tau_i) per episode (every step of episode i gets it).
// gigpo_advantages with omega = 0 gives exactly these per step.
std::vector<double> episode_advantages(const std::vector<Episode>& group, AdvNorm norm = AdvNorm::None,
                                       double eps = 1e-6);

// R_t = r_t + gamma R_{t+1} backwards from the last step (R_T = r_T); gamma in [0, 1].
std::vector<double> discounted_returns(const std::vector<double>& rewards, double gamma);

}  // namespace ltrun::rl
