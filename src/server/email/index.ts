// Email verification (API.md §6) as a library: `EmailVerifier` checks addresses, `isBillable` tells
// the routes which results are charged.
export {
  CATCH_ALL_TTL_MS,
  type EmailReason,
  type EmailScore,
  type EmailVerifierOptions,
  EmailVerifier,
  REASON_OUTCOMES,
  type VerifyOptions,
  isBillable,
} from './verifier.js';
export { type ParsedAddress, parseAddress } from './syntax.js';
export { suggestDomain } from './suggest.js';
export { isDisposable, isFreeProvider, isRoleAccount } from './lists.js';
export { type RcptVerdict, type SmtpReply, classifyRcpt, parseReply } from './smtp.js';
