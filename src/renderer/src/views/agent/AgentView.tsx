// The Agent screen: a chat with the tool-calling agent. The reply streams in as it is written, each
// tool call shows as a step card the moment it starts (with the build logs of what it builds), and
// refusals read as what they mean (402, 429, 503…), in the app's words. With no AI engine at all, a
// notice above the composer says so before anything is sent, with "Add your AI key". Enter sends,
// Shift+Enter starts a new line; Stop closes the run. The conversation stays when the screen is left
// and is sent along with each question.
import { useEffect, useLayoutEffect, useRef, useState, type KeyboardEvent } from 'react';
import { Icon } from '../../components/Icon';
import { formatUsd } from '../../lib/format';
import { isRunning, type AssistantTurn, type Turn, type TurnItem } from '../../stores/agent/conversation';
import { useEngineOffer } from '../../stores/agent/engines';
import { explainAiError } from '../../stores/agent/errors';
import { useAgentActions, useConversation } from '../../stores/agent/selectors';
import { effectiveEngine, EnginePicker } from './EnginePicker';
import { AddAiKeyLink, NoEngineNotice } from './NoEngineNotice';
import { StepCard } from './StepCard';

const EXAMPLES = [
  'Which of my projects are running, and at what URLs?',
  'Build a landing page for a weekend bakery pop-up called Crumb & Co.',
  'Read the logs of my last failed deploy and tell me what went wrong.',
];

/** How close to the bottom (px) still counts as following the conversation. */
const BOTTOM_SLACK_PX = 80;

export function AgentView() {
  const { turns, running, engine } = useConversation();
  const { send, stop, reset, setEngine } = useAgentActions();
  const offer = useEngineOffer();
  const [draft, setDraft] = useState('');
  const input = useRef<HTMLTextAreaElement>(null);
  const following = useFollowBottom(turns);

  // A chosen engine that is gone (the key deleted, another platform) is the platform's choice again.
  const chosen = effectiveEngine(engine, offer);
  useEffect(() => {
    if (chosen !== engine) setEngine(chosen);
  }, [chosen, engine, setEngine]);

  const submit = async (text: string) => {
    if (running || text.trim() === '') return;
    following.current = true;
    setDraft('');
    await send(text);
    input.current?.focus();
  };

  const onKeyDown = (event: KeyboardEvent<HTMLTextAreaElement>) => {
    if (event.key === 'Enter' && !event.shiftKey && !event.nativeEvent.isComposing) {
      event.preventDefault();
      void submit(draft);
    }
  };

  return (
    <div className="page agent-page" data-testid="agent-view">
      <header className="page-header">
        <div className="title-block">
          <h1 className="page-title">Agent</h1>
          <p className="page-subtitle">
            Ask in plain words: it lists and inspects projects, reads logs, builds, edits and deploys apps.
          </p>
        </div>
        {turns.length > 0 ? (
          <button type="button" className="btn btn-sm" onClick={reset} data-testid="agent-new-chat">
            <Icon name="plus" />
            New chat
          </button>
        ) : null}
      </header>

      {turns.length === 0 ? (
        <section
          className="empty-state agent-empty"
          aria-labelledby="agent-empty-title"
          data-testid="agent-empty"
        >
          <span className="empty-icon" aria-hidden="true">
            <Icon name="chat" size={22} />
          </span>
          <h2 id="agent-empty-title">What should we do?</h2>
          <p>Each step the agent takes shows here as it runs, with its input, result and timing.</p>
          <ul className="agent-examples">
            {EXAMPLES.map((example) => (
              <li key={example}>
                <button
                  type="button"
                  className="agent-example"
                  onClick={() => void submit(example)}
                  data-testid="agent-example"
                >
                  {example}
                </button>
              </li>
            ))}
          </ul>
        </section>
      ) : (
        <ol className="agent-turns" aria-label="Conversation" data-testid="agent-turns">
          {turns.map((turn) => (
            <li key={turn.id} className={`agent-turn is-${turn.role}`}>
              {turn.role === 'user' ? (
                <div className="agent-bubble" data-testid="agent-user-message">
                  {turn.content}
                </div>
              ) : (
                <AssistantReply turn={turn} />
              )}
            </li>
          ))}
        </ol>
      )}

      <p className="sr-only" role="status" data-testid="agent-announce">
        {announcement(turns)}
      </p>

      <form
        className="agent-composer"
        onSubmit={(event) => {
          event.preventDefault();
          void submit(draft);
        }}
      >
        {offer.none ? <NoEngineNotice where="agent" id="agent-no-engine" /> : null}
        <label className="sr-only" htmlFor="agent-input">
          Message the agent
        </label>
        <textarea
          ref={input}
          id="agent-input"
          className="input agent-input"
          rows={2}
          value={draft}
          onChange={(event) => setDraft(event.target.value)}
          onKeyDown={onKeyDown}
          placeholder="Ask the agent to build, fix or explain something…"
          aria-describedby={offer.none ? 'agent-no-engine agent-input-hint' : 'agent-input-hint'}
          maxLength={32_000}
          autoFocus
          data-testid="agent-input"
        />
        <div className="agent-composer-bar">
          <EnginePicker
            value={chosen}
            onChange={setEngine}
            offer={offer}
            disabled={running}
            where="agent"
            testId="agent-engine"
            compact
          />
          <div className="agent-composer-actions">
            <span className="muted agent-hint" id="agent-input-hint">
              <kbd className="kbd">Enter</kbd> sends · <kbd className="kbd">Shift</kbd>+
              <kbd className="kbd">Enter</kbd> new line
            </span>
            {running ? (
              <button
                type="button"
                className="btn btn-danger"
                onClick={() => void stop()}
                data-testid="agent-stop"
              >
                <Icon name="stop" />
                Stop
              </button>
            ) : (
              <button
                type="submit"
                className="btn btn-primary"
                disabled={draft.trim() === ''}
                data-testid="agent-send"
              >
                <Icon name="send" />
                Send
              </button>
            )}
          </div>
        </div>
      </form>
    </div>
  );
}

function AssistantReply({ turn }: { turn: AssistantTurn }) {
  const live = isRunning(turn);
  const lastText = lastTextIndex(turn.items);
  return (
    <div className="agent-reply" data-testid="agent-reply" data-state={turn.state} aria-busy={live}>
      {turn.items.map((item, index) => (
        <ReplyItem
          key={index}
          item={item}
          streaming={live && index === lastText && index === turn.items.length - 1}
        />
      ))}
      {live && (turn.items.length === 0 || turn.items[turn.items.length - 1]?.kind !== 'text') ? (
        <p className="agent-thinking" role="status" data-testid="agent-thinking">
          <Icon name="spinner" className="spin" />
          {turn.state === 'starting' ? 'Starting…' : 'Working…'}
        </p>
      ) : null}
      <ReplyFooter turn={turn} />
    </div>
  );
}

function ReplyItem({ item, streaming }: { item: TurnItem; streaming: boolean }) {
  switch (item.kind) {
    case 'text':
      return (
        <div className={`agent-text${streaming ? ' is-streaming' : ''}`} data-testid="agent-text">
          {item.text}
        </div>
      );
    case 'step':
      return <StepCard step={item.step} />;
    case 'note':
      return (
        <p className="agent-note" data-testid="agent-note">
          <Icon name="alert" size={14} />
          {item.text}
        </p>
      );
    case 'error': {
      const { title, detail, hint, addKey } = explainAiError(item.code, item.status, item.detail);
      return (
        <div className="notice notice-error" role="alert" data-testid="agent-error" data-code={item.code}>
          <Icon name="alert" className="notice-icon" />
          <div className="notice-body">
            <p className="notice-title">{title}</p>
            <p>{detail}</p>
            {hint ? <p className="muted">{hint}</p> : null}
          </div>
          {addKey ? (
            <div className="notice-action">
              <AddAiKeyLink testId="agent-error-add-key" />
            </div>
          ) : null}
        </div>
      );
    }
  }
}

function ReplyFooter({ turn }: { turn: AssistantTurn }) {
  if (turn.state === 'stopped')
    return (
      <p className="agent-meta" data-testid="agent-stopped">
        Stopped.
      </p>
    );
  if (turn.state !== 'done' || !turn.usage) return null;
  return (
    <p className="agent-meta" data-testid="agent-usage">
      {turn.usage.engine === 'own_key'
        ? 'Your own key · not billed'
        : `Included engine · ${turn.usage.cost_usd > 0 && turn.usage.cost_usd < 0.01 ? '< $0.01' : formatUsd(turn.usage.cost_usd)}`}
    </p>
  );
}

/** What a screen reader hears as a run goes on: its state, not every token. */
function announcement(turns: Turn[]): string {
  const last = turns[turns.length - 1];
  if (!last || last.role !== 'assistant') return '';
  switch (last.state) {
    case 'starting':
    case 'streaming':
      return 'The agent is working.';
    case 'done':
      return 'The agent replied.';
    case 'stopped':
      return 'The run was stopped.';
    case 'failed':
      return 'The run failed.';
  }
}

function lastTextIndex(items: TurnItem[]): number {
  for (let i = items.length - 1; i >= 0; i--) if (items[i]!.kind === 'text') return i;
  return -1;
}

/**
 * Keeps the conversation scrolled to its end while it grows, unless the user scrolled up to read;
 * scrolling back down follows again. The page scrolls inside the app's content pane.
 */
function useFollowBottom(turns: Turn[]) {
  const following = useRef(true);
  useEffect(() => {
    const content = document.getElementById('content');
    if (!content) return;
    const onScroll = () => {
      following.current = content.scrollHeight - content.scrollTop - content.clientHeight <= BOTTOM_SLACK_PX;
    };
    content.addEventListener('scroll', onScroll, { passive: true });
    return () => content.removeEventListener('scroll', onScroll);
  }, []);
  useLayoutEffect(() => {
    const content = document.getElementById('content');
    if (content && following.current) content.scrollTop = content.scrollHeight;
  }, [turns]);
  return following;
}
