package api

import (
	"fmt"
	"strings"

	"google.golang.org/genai"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
)

// Thinking budgets, in tokens, for the models that take a budget (Gemini
// 2.5), by thinking mode. They follow the expert tools' specification's ladder, capped at 32K
// tokens: minimal 128, low 2048, medium 8192, high 16384, max 32768.
var thinkingBudgets = map[string]int32{
	"minimal": 128,
	"low":     2048,
	"medium":  8192,
	"high":    16384,
	"max":     32768,
}

// The API refuses budgets outside a model's range. Gemini 2.5 Pro takes
// 128–32768; the Flash models stop at 24576, and Flash-Lite starts at 512.
const (
	flashMaxBudget     = 24576
	flashLiteMinBudget = 512
)

// thinking sets cfg's thinking configuration for turn t on model: its
// thinking mode (see thinkingConfig) and whether the model's thought
// summaries come with the answer. It returns what was changed to fit the
// model, or not applied, for Answer.NotApplied.
func thinking(t backend.Turn, model string, mi modelInfo, known bool, cfg *genai.GenerateContentConfig) (notes []string, err error) {
	if t.ThinkingMode != "" {
		tc, note, err := thinkingConfig(t.ThinkingMode, model, mi, known)
		if err != nil {
			return nil, newError(backend.KindInput, nil, "%v", err)
		}
		cfg.ThinkingConfig = tc
		if note != "" {
			notes = append(notes, note)
		}
	}
	if t.IncludeThoughts {
		switch {
		case known && !mi.thinking:
			notes = append(notes, fmt.Sprintf("include_thoughts: model %s does not think (the API's model list says so)", model))
		case cfg.ThinkingConfig != nil && cfg.ThinkingConfig.ThinkingBudget != nil && *cfg.ThinkingConfig.ThinkingBudget == 0:
			notes = append(notes, "include_thoughts: thinking_mode off leaves no thoughts to include")
		default:
			if cfg.ThinkingConfig == nil {
				cfg.ThinkingConfig = &genai.ThinkingConfig{}
			}
			cfg.ThinkingConfig.IncludeThoughts = true
		}
	}
	return notes, nil
}

// thinkingConfig maps a thinking mode onto model's thinking configuration:
// a level for Gemini 3 models, a budget for the others. note says what was
// changed to fit the model, or why nothing could be applied (tc nil).
//
// "off" is a budget of 0 on the budget models that take it (Gemini 2.5
// Flash and Flash-Lite), and refused on those that cannot stop thinking
// (Gemini 2.5 Pro, whose least budget is 128 tokens). Gemini 3 models
// cannot turn thinking off: "off" is their lowest level (MINIMAL, or LOW
// on the Pro models), and the note says so.
func thinkingConfig(mode, model string, mi modelInfo, known bool) (tc *genai.ThinkingConfig, note string, err error) {
	budget, ok := thinkingBudgets[mode]
	if !ok && mode != "off" {
		return nil, "", fmt.Errorf("thinking_mode %q is not one of %s", mode, strings.Join(backend.ThinkingModes, ", "))
	}
	if known && !mi.thinking {
		return nil, fmt.Sprintf("thinking_mode: model %s does not think (the API's model list says so)", model), nil
	}
	gemini3 := strings.HasPrefix(model, "gemini-3")
	if mode == "off" {
		switch {
		case gemini3 && strings.Contains(model, "-pro"):
			return &genai.ThinkingConfig{ThinkingLevel: genai.ThinkingLevelLow}, "thinking_mode: off sent as LOW, the least " +
				model + " takes: Gemini 3 models cannot turn thinking off", nil
		case gemini3:
			return &genai.ThinkingConfig{ThinkingLevel: genai.ThinkingLevelMinimal}, "thinking_mode: off sent as MINIMAL, the least " +
				model + " takes: Gemini 3 models cannot turn thinking off", nil
		case strings.Contains(model, "-pro"):
			return nil, "", fmt.Errorf("thinking_mode off: model %s cannot turn thinking off (its least thinking budget is %d "+
				"tokens); use thinking_mode minimal, or a Flash model (e.g. flash), which can", model, thinkingBudgets["minimal"])
		}
		return &genai.ThinkingConfig{ThinkingBudget: genai.Ptr[int32](0)}, "", nil
	}
	if gemini3 {
		// Gemini 3 takes levels. Its Pro models know only LOW and HIGH.
		level := map[string]genai.ThinkingLevel{
			"minimal": genai.ThinkingLevelMinimal,
			"low":     genai.ThinkingLevelLow,
			"medium":  genai.ThinkingLevelMedium,
			"high":    genai.ThinkingLevelHigh,
			"max":     genai.ThinkingLevelHigh,
		}[mode]
		if strings.Contains(model, "-pro") {
			switch level {
			case genai.ThinkingLevelMinimal:
				level, note = genai.ThinkingLevelLow, "thinking_mode: minimal sent as LOW, the least "+model+" takes"
			case genai.ThinkingLevelMedium:
				level, note = genai.ThinkingLevelHigh, "thinking_mode: medium sent as HIGH, as "+model+" takes only LOW and HIGH"
			}
		}
		return &genai.ThinkingConfig{ThinkingLevel: level}, note, nil
	}
	switch {
	case strings.Contains(model, "flash-lite") && budget < flashLiteMinBudget:
		note = fmt.Sprintf("thinking_mode: %s sent as a budget of %d tokens, the least %s takes", mode, flashLiteMinBudget, model)
		budget = flashLiteMinBudget
	case strings.Contains(model, "flash") && budget > flashMaxBudget:
		note = fmt.Sprintf("thinking_mode: %s sent as a budget of %d tokens, the most %s takes", mode, flashMaxBudget, model)
		budget = flashMaxBudget
	}
	return &genai.ThinkingConfig{ThinkingBudget: genai.Ptr(budget)}, note, nil
}
