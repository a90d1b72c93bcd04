// runtime/rl/gigpo.h: GiGPO's advantages (Feng et al. 2025, "Group-in-Group Policy Optimization
// for LLM Agent Training", arXiv 2505.10978) for one group of episodes of one task, and GRPO on
// episodes as its baseline. Plain numbers: no model, no tokens, no Lua; the caller broadcasts a
// step's advantage over that step's action tokens.
//
// Notation: a group of N episodes tau_1..tau_N of one task from the same initial state (same
// seed); episode i has T_i >= 1 steps; step t was taken in the state whose anchor key (the
// observation text, or any key the environment gives) is s_t^(i), earned reward r_t^(i) and
// carries the row penalty p_t^(i) (0 unless given: an invalid action's penalty, see below).
//   R(tau_i)   = sum_t r_t^(i)                                   episode return
//   R_t^(i)    = sum_{k >= t} gamma^(k - t) r_k^(i)              discounted return from step t (Eq. 5)
//   A_E(i, t)  = (R(tau_i) - p_t^(i) - mean E) / F(E)            episode relative advantage (Eq. 3)
//   G(s)       = {(i, t) : s_t^(i) = s}                          anchor-state group (Eq. 6)
//   A_S(i, t)  = (R_t^(i) - p_t^(i) - mean_G(s)) / F(G(s))       step relative advantage (Eq. 7)
//   A(i, t)    = A_E(i, t) + omega * A_S(i, t)                   the advantage of step t (Eq. 8)
// F (the paper's F_norm) is AdvNorm::Std: the unbiased sample std (as torch.std) + eps, or
// AdvNorm::None: 1 (loss.h). A set whose values are all equal gets 0. G(s) spans all episodes
// of the group and keeps repeated visits of s within one episode, as verl-agent's
// build_step_group does (exact key equality; its optional similarity clustering is not
// built); a singleton anchor group gets A_S = 0 (verl-agent: mean = its own return, std 1).
//
// The defaults are verl-agent's (gigpo/core_gigpo.py with its trainer, read for this file):
// - norm Std: the trainer's compute_advantage defaults to gigpo mode "mean_std_norm" (the
//   function compute_gigpo_outcome_advantage's own default, "mean_norm", is AdvNorm::None).
// - scope Steps: E, the set A_E's mean and std are taken over, is the group's step rows, each
//   carrying R(tau_i) - p_t^(i) (episode_norm_reward with compute_mean_std_cross_all_data,
//   its default), so a long episode weighs more. Episodes: E = {R(tau_j)}, one value per
//   episode (the paper's Eq. 3; this file's behaviour before).
// - lone Pass: when E has one value (one episode of one step under Steps; one episode under
//   Episodes), mean 0 and std 1: A_E = (R - p) / (1 + eps), or R - p under None, as
//   verl-agent. Zero: A_E = -p (mean = the value, F = 1; this file's behaviour before).
// - the row penalty p (verl-agent's invalid-action penalty, apply_invalid_action_penalty) is
//   subtracted from that step's row only: from the row's episode score and from its already
//   discounted return, never from earlier steps' returns or the episode return R. A penalty
//   that is part of the environment's reward instead (rewards carry it, penalties empty) enters
//   R and every earlier R_t: the caller chooses (lt.envs.agent.rows' penalty option).
// Defaults: gamma 0.95 and omega 1 (the paper's settings).
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
  std::vector<double> penalties;  // empty (none), or one per step: p_t, on that step's row only
};

// the set A_E is normalised over (see above)
enum class EpisodeScope { Steps, Episodes };
// A_E when that set has one value
enum class LoneEpisode { Pass, Zero };

struct GigpoOptions {
  double gamma = 0.95;  // discount of the step returns, in [0, 1]
  double omega = 1.0;   // weight of A_S; 0: GRPO on episodes (A = A_E)
  AdvNorm norm = AdvNorm::Std;
  EpisodeScope scope = EpisodeScope::Steps;
  LoneEpisode lone = LoneEpisode::Pass;
  double eps = 1e-6;    // added to the std (norm Std), >= 0
};

// gamma, omega, eps by key (runtime/core/fields.h); norm is parse_adv_norm's, scope and lone
// the parsers below.
const Fields<GigpoOptions>& gigpo_option_fields();
EpisodeScope parse_episode_scope(const std::string& s);  // "steps" | "episodes"
LoneEpisode parse_lone_episode(const std::string& s);    // "pass" | "zero"

struct GigpoAdvantages {
  std::vector<double> episode_return;  // R(tau_i)
  std::vector<double> episode;         // A_E of episode i's rows without a penalty (p = 0)
  // per episode, per step:
  std::vector<std::vector<double>> episode_step;  // A_E(i, t)
  std::vector<std::vector<double>> returns;     // R_t^(i) (without the row penalty)
  std::vector<std::vector<double>> step;        // A_S(i, t)
  std::vector<std::vector<double>> advantage;   // A(i, t)
  std::vector<std::vector<int64_t>> anchor_group;  // the step's anchor group, 0-based, numbered
                                                   // by first appearance (episode, then step)
  std::vector<int64_t> group_size;     // per anchor group: its number of steps
};

// All of the above for one group. Errors (prefix "rl.gigpo:"): an empty group, an episode with
// no steps or with anchors, rewards (or penalties, when given) of different lengths, a
// non-finite reward or penalty (naming the episode and step, 1-based), gamma outside [0, 1], a
// non-finite omega, eps < 0.
GigpoAdvantages gigpo_advantages(const std::vector<Episode>& group, const GigpoOptions& o = {});

// GRPO on episodes, the baseline: A_E per episode under scope Episodes (every step of episode i
// gets it; penalties not counted). gigpo_advantages with omega = 0, scope Episodes and no
// penalties gives exactly these per step.
std::vector<double> episode_advantages(const std::vector<Episode>& group, AdvNorm norm = AdvNorm::None,
                                       double eps = 1e-6, LoneEpisode lone = LoneEpisode::Zero);

// R_t = r_t + gamma R_{t+1} backwards from the last step (R_T = r_T); gamma in [0, 1].
std::vector<double> discounted_returns(const std::vector<double>& rewards, double gamma);

}  // namespace ltrun::rl
