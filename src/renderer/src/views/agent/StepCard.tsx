// One tool call of the agent, live: its tool and input, a spinner until it finishes, then its status,
// duration and result; the build logs of what it built stream in underneath as they come.
import { useLayoutEffect, useRef, useState } from 'react';
import { Icon } from '../../components/Icon';
import { StatusBadge } from '../../components/StatusBadge';
import type { StepBuild, StepView } from '../../stores/agent/conversation';
import { formatDuration, prettyJson, RESULT_PREVIEW_CHARS, summarizeInput, toolLabel } from './format';

const STATUS_LABELS = { running: 'Running…', ok: 'Done', error: 'Failed' } as const;

export function StepCard({ step }: { step: StepView }) {
  const summary = summarizeInput(step.input);
  return (
    <article
      className="step-card"
      data-status={step.status}
      data-testid="agent-step"
      data-tool={step.tool}
      aria-label={`Step ${toolLabel(step.tool)}: ${STATUS_LABELS[step.status]}`}
    >
      <header className="step-head">
        <span className="step-icon" aria-hidden="true">
          {step.status === 'running' ? (
            <Icon name="spinner" className="spin" />
          ) : (
            <Icon name={step.status === 'ok' ? 'check' : 'alert'} />
          )}
        </span>
        <span className="step-tool">
          <span className="step-tool-name">{toolLabel(step.tool)}</span>
          <span className="step-tool-id mono">{step.tool}</span>
        </span>
        {summary ? (
          <span className="step-summary mono" title={summary}>
            {summary}
          </span>
        ) : (
          <span className="step-summary" />
        )}
        <span className="step-state" data-testid="agent-step-status">
          {STATUS_LABELS[step.status]}
          {step.durationMs !== null ? (
            <span className="step-duration" data-testid="agent-step-duration">
              {' '}
              · {formatDuration(step.durationMs)}
            </span>
          ) : null}
        </span>
      </header>
      <div className="step-body">
        {step.input !== undefined ? (
          <details className="step-section">
            <summary>Input</summary>
            <pre className="step-json" data-testid="agent-step-input">
              {prettyJson(step.input)}
            </pre>
          </details>
        ) : null}
        {step.status !== 'running' && step.output !== undefined ? (
          <StepResult output={step.output} failed={step.status === 'error'} />
        ) : null}
        {step.builds.map((build) => (
          <BuildLog key={build.projectId} build={build} />
        ))}
      </div>
    </article>
  );
}

function StepResult({ output, failed }: { output: unknown; failed: boolean }) {
  const [all, setAll] = useState(false);
  const text = prettyJson(output);
  const long = text.length > RESULT_PREVIEW_CHARS;
  return (
    <details className="step-section" open={failed}>
      <summary>{failed ? 'Error' : 'Result'}</summary>
      <pre className={`step-json${failed ? ' is-error' : ''}`} data-testid="agent-step-output">
        {long && !all ? `${text.slice(0, RESULT_PREVIEW_CHARS)}…` : text}
      </pre>
      {long ? (
        <button type="button" className="btn btn-sm btn-ghost" onClick={() => setAll(!all)}>
          {all ? 'Show less' : `Show all ${text.length.toLocaleString()} characters`}
        </button>
      ) : null}
    </details>
  );
}

function BuildLog({ build }: { build: StepBuild }) {
  const scroller = useRef<HTMLPreElement>(null);
  useLayoutEffect(() => {
    const element = scroller.current;
    if (element) element.scrollTop = element.scrollHeight;
  }, [build.lines.length]);
  return (
    <section className="step-build" data-testid="agent-build" aria-label={`Build of ${build.projectId}`}>
      <header className="step-build-head">
        <span>
          Build of <span className="mono">{build.projectId}</span>
        </span>
        {build.status ? <StatusBadge status={build.status} /> : null}
      </header>
      <pre
        ref={scroller}
        className="step-build-log"
        role="log"
        aria-live="off"
        tabIndex={0}
        data-testid="agent-build-log"
      >
        {build.dropped > 0 ? `… ${build.dropped.toLocaleString()} earlier lines\n` : ''}
        {build.lines.length > 0 ? build.lines.join('\n') : 'Waiting for the build to write something…'}
      </pre>
    </section>
  );
}
