// agents/agents/debate_agent.ts
import { defineAgent } from '@standardagents/spec';
export default defineAgent({
name: 'debate_agent',
type: 'dual_ai',
maxSessionTurns: 20,
sideA: {
label: 'Pro',
prompt: 'debate_pro',
stopOnResponse: false,
maxTurns: 10,
},
sideB: {
label: 'Con',
prompt: 'debate_con',
stopOnResponse: false,
maxTurns: 10,
endConversationTool: 'conclude_debate',
},
tags: ['simulation', 'debate'],
});
